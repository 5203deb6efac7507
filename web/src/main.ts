// The viewer: two panes (target | golden), synchronized selection, search, filters, findings.
import { api, Finding, GraphSel, Hit, Meta, NodeDetail, Side } from "./api";
import { byId, clear, el, swatch } from "./dom";
import { showNode } from "./panel";
import { TreePane } from "./tree";

let meta: Meta;
let graph: GraphSel = { step: 0, rank: 0, micro: null };
const panes: Record<Side, TreePane> = {
  target: new TreePane("target", byId("pane-target")),
  golden: new TreePane("golden", byId("pane-golden")),
};
const other = (s: Side): Side => (s === "target" ? "golden" : "target");
const hasGolden = () => meta.sides.includes("golden");
let selectSeq = 0;  // the latest selection wins when responses arrive out of order

function say(text: string): void {
  byId("msg").textContent = text;
}

function findings(): { first: Finding | null; suspects: Finding[] } {
  const f = meta.findings[`${graph.step}/${graph.rank}`];
  const suspects = f?.suspects ?? [];
  return { first: f?.first_divergence ?? suspects[0] ?? null, suspects };
}

// A node was selected in one pane: show it, and select its match in the other pane.
async function onSelect(side: Side, name: string, sync: boolean): Promise<void> {
  const seq = ++selectSeq;
  try {
    const d = await api.node(graph, side, name);
    let match: NodeDetail | null = null;
    if (hasGolden() && d.matched && d.matched_link.length) {
      const matchName = d.matched_link[d.matched_link.length - 1];
      match = await api.node(graph, other(side), matchName).catch(() => null);
      if (sync && seq === selectSeq) await panes[other(side)].reveal(d.matched_link, false);
    }
    if (seq !== selectSeq) return;
    const [t, g] = side === "target" ? [d, match] : [match, d];
    showNode(byId("panel"), t, g);
    document.body.dataset.selected = `${side}:${name}`;
  } catch (e) {
    say(String(e));
  }
}

async function goTo(side: Side, path: string[]): Promise<void> {
  if (await panes[side].reveal(path, false)) await onSelect(side, path[path.length - 1], true);
}

function showHits(title: string, side: Side, hits: Hit[], truncated: boolean): void {
  const box = byId("hits");
  clear(box);
  box.appendChild(el("div", "hits-title",
    `${title}: ${hits.length}${truncated ? "+" : ""} node${hits.length === 1 ? "" : "s"}`));
  const list = el("ol");
  for (const h of hits) {
    const li = el("li", undefined, undefined, [swatch(h.color), el("span", undefined, ` ${h.name}`)]);
    li.dataset.name = h.name;
    li.addEventListener("click", () => void goTo(side, h.path));
    list.appendChild(li);
  }
  box.appendChild(list);
}

async function search(q: string): Promise<void> {
  if (!q) return;
  ++selectSeq;  // a selection still loading from before this search is stale now
  let side: Side = "target";
  let r = await api.search(graph, side, q);
  if (!r.results.length && hasGolden()) {
    side = "golden";
    r = await api.search(graph, side, q);
  }
  showHits(`"${q}" (${side})`, side, r.results, r.truncated);
  if (r.results.length) await goTo(side, r.results[0].path);
  else say(`no node matches "${q}"`);
}

async function filter(kind: string): Promise<void> {
  if (!kind) return;
  const r = await api.filter(graph, "target", kind);
  showHits(kind, "target", r.results, r.truncated);
}

async function firstDivergence(): Promise<void> {
  const f = findings().first;
  if (!f) return;
  const side: Side = f.side === "golden" ? "golden" : "target";
  const d = await api.node(graph, side, f.node);
  await goTo(side, [...d.parent_chain, d.name]);
}

function fillSelect(id: string, values: { value: string; label: string }[]): void {
  const s = byId<HTMLSelectElement>(id);
  clear(s);
  for (const v of values) {
    const o = el("option", undefined, v.label);
    o.value = v.value;
    s.appendChild(o);
  }
}

function legend(): void {
  const box = byId("legend");
  clear(box);
  for (const c of meta.colors) {
    const range = c.value.length === 2 ? (c.value[0] === c.value[1] ? `${c.value[0]}`
      : `[${c.value[0]}, ${c.value[1]}]`) : "unmatched";
    const item = el("span", "legend-item", undefined, [swatch(c.color), el("span", undefined, range)]);
    item.title = c.description;
    item.dataset.color = c.color;
    item.addEventListener("click", () => {
      byId<HTMLSelectElement>("filter").value = `color:${c.color}`;
      void filter(`color:${c.color}`);
    });
    box.appendChild(item);
  }
}

async function loadGraph(): Promise<void> {
  say("");
  clear(byId("hits"));
  const button = byId<HTMLButtonElement>("first-div");
  const f = findings();
  button.disabled = !f.first;
  button.title = f.first ? `${f.first.node}: ${f.first.reason ?? ""}`
    : "No findings for this step and rank (msprobe's files carry none)";
  fillSelect("filter", [{ value: "", label: "Filter…" }, { value: "unmatched", label: "unmatched" },
    ...(f.suspects.length ? [{ value: "suspects", label: `suspects (${f.suspects.length})` }] : []),
    ...meta.colors.map((c) => ({ value: `color:${c.color}`, label: `colour ${c.color}` }))]);
  const loads = [panes.target.load(graph)];
  if (hasGolden()) loads.push(panes.golden.load(graph));
  await Promise.all(loads);
  document.body.dataset.ready = "1";
}

async function start(): Promise<void> {
  meta = await api.meta();
  byId("file").textContent = `${meta.file} · ${meta.graph_type} · ${meta.mode}`;
  document.body.classList.toggle("single", !hasGolden());
  graph = { step: meta.steps[0] ?? 0, rank: meta.ranks[0] ?? 0, micro: null };
  fillSelect("step", meta.steps.map((s) => ({ value: String(s), label: String(s) })));
  fillSelect("rank", meta.ranks.map((r) => ({ value: String(r), label: String(r) })));
  const micro = [{ value: "", label: "all" }];
  for (let i = 0; i < meta.micro_steps && meta.micro_steps > 1; i++) {
    micro.push({ value: String(i), label: String(i) });
  }
  fillSelect("micro", micro);
  byId("micro-label").hidden = micro.length === 1;
  legend();
  for (const side of ["target", "golden"] as Side[]) {
    panes[side].onSelect = (n) => void onSelect(side, n.info.name, true);
  }
  const reload = () => {
    graph = {
      step: Number(byId<HTMLSelectElement>("step").value),
      rank: Number(byId<HTMLSelectElement>("rank").value),
      micro: byId<HTMLSelectElement>("micro").value === "" ? null
        : Number(byId<HTMLSelectElement>("micro").value),
    };
    loadGraph().catch((e) => say(String(e)));
  };
  for (const id of ["step", "rank", "micro"]) byId(id).addEventListener("change", reload);
  byId<HTMLInputElement>("search").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") search((ev.target as HTMLInputElement).value.trim()).catch((e) => say(String(e)));
  });
  byId<HTMLSelectElement>("filter").addEventListener("change", (ev) =>
    filter((ev.target as HTMLSelectElement).value).catch((e) => say(String(e))));
  byId("first-div").addEventListener("click", () => firstDivergence().catch((e) => say(String(e))));
  await loadGraph();
}

start().catch((e) => say(`cannot load the graph: ${String(e)}`));
