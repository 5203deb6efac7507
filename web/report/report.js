// numprobe monitor-report's page script (plain ES2020, embedded into the numprobe binary beside
// uPlot). Everything read from the monitor files reaches the page through textContent, title or
// uPlot's labels (which use textContent): never as markup.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("monitor-data").textContent);
  const GROUPS = ["actv", "actv_grad", "grad_unreduced", "grad_reduced", "exp_avg", "exp_avg_sq",
    "param_origin", "param_updated", "other"];
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf"];
  const rankSel = document.getElementById("rank");
  const filter = document.getElementById("filter");
  const charts = document.getElementById("charts");
  let plots = [];

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  const ranks = [...new Set(data.series.map((s) => s.rank))].sort((a, b) => a - b);
  rankSel.appendChild(el("option", "all")).value = "all";
  for (const r of ranks) rankSel.appendChild(el("option", "rank " + r)).value = String(r);
  if (ranks.length > 1) rankSel.value = String(ranks[0]);

  document.getElementById("summary").textContent =
    data.runs.length + " run(s), " + ranks.length + " rank(s), " + data.series.length +
    " series, " + data.anomalies.length + " anomal" + (data.anomalies.length === 1 ? "y" : "ies");

  const keys = [...new Set(data.series.map((s) => s.group + "\u0000" + s.op))].sort((a, b) => {
    const [ga, oa] = a.split("\u0000"), [gb, ob] = b.split("\u0000");
    return (GROUPS.indexOf(ga) - GROUPS.indexOf(gb)) || (oa < ob ? -1 : oa > ob ? 1 : 0);
  });

  function placeMarkers(u, marks) {
    for (const m of u.over.querySelectorAll(".anomaly-marker")) m.remove();
    for (const m of marks) {
      const left = u.valToPos(m.step, "x");
      let top = m.value === null ? 0 : u.valToPos(m.value, "y");
      if (!Number.isFinite(left) || left < 0 || left > u.over.clientWidth) continue;
      if (!Number.isFinite(top)) top = 0;
      const d = el("div", undefined, "anomaly-marker");
      d.style.left = left + "px";
      d.style.top = top + "px";
      d.title = m.message;
      u.over.appendChild(d);
    }
  }

  function render() {
    for (const p of plots) p.destroy();
    plots = [];
    charts.textContent = "";
    const rank = rankSel.value;
    const needle = filter.value;
    const width = Math.max(400, Math.min(1400, window.innerWidth - 40));
    for (const key of keys) {
      const [group, op] = key.split("\u0000");
      const series = data.series.filter((s) => s.group === group && s.op === op &&
        (rank === "all" || String(s.rank) === rank) && (!needle || s.tag.includes(needle)));
      if (!series.length) continue;
      const xs = [...new Set(series.flatMap((s) => s.x))].sort((a, b) => a - b);
      const at = new Map(xs.map((x, i) => [x, i]));
      const ys = series.map((s) => {
        const y = new Array(xs.length).fill(null);
        s.x.forEach((x, i) => { y[at.get(x)] = s.y[i]; });
        return y;
      });
      const marks = [];
      for (const a of data.anomalies) {
        if (a.group !== group) continue;
        // anomaly.json has no op field; msprobe's message names it: "... in ('<tag>', '<op>') at".
        const named = /', '([A-Za-z_]+)'\) at step/.exec(a.message);
        if (named && named[1] !== op) continue;
        const i = series.findIndex((s) => s.rank === a.rank && s.tag === a.tag);
        if (i < 0 || !at.has(a.step)) continue;
        marks.push({ step: a.step, value: ys[i][at.get(a.step)], message: a.message });
      }
      const box = el("div", undefined, "chart");
      box.dataset.group = group;
      box.dataset.op = op;
      box.dataset.series = String(series.length);
      box.dataset.anomalies = String(marks.length);
      charts.appendChild(box);
      const opts = {
        title: group + " \u00b7 " + op,
        width,
        height: 280,
        scales: { x: { time: false } },
        cursor: { drag: { x: true, y: false } },
        series: [{ label: "step" }].concat(series.map((s, i) => ({
          label: (rank === "all" ? "rank " + s.rank + " " : "") + s.tag,
          stroke: COLORS[i % COLORS.length],
          width: 1.5,
          spanGaps: true,
          points: { show: xs.length < 60 },
        }))),
        hooks: { draw: [(u) => placeMarkers(u, marks)] },
      };
      plots.push(new uPlot(opts, [xs].concat(ys), box));
    }
    if (!plots.length) charts.appendChild(el("p", "no series for this selection", "empty"));
  }

  const tbody = document.querySelector("#anomalies tbody");
  const sorted = data.anomalies.slice().sort((a, b) => a.step - b.step || a.micro_step - b.micro_step ||
    a.call_id - b.call_id || a.rank - b.rank);
  for (const a of sorted) {
    const tr = el("tr", undefined, "anomaly");
    for (const v of [a.rank, a.step, a.micro_step, a.call_id, a.tag_name, a.message]) tr.appendChild(el("td", v));
    tbody.appendChild(tr);
  }
  if (!sorted.length) tbody.appendChild(el("tr")).appendChild(el("td", "no anomaly recorded"));

  rankSel.addEventListener("change", render);
  filter.addEventListener("input", render);
  render();
  document.body.dataset.ready = "1";
})();
