// The node panel: both sides' statistics for the selected node, its findings, stack and chain.
import { DataRows, NodeDetail } from "./api";
import { clear, el, swatch } from "./dom";

function statsTable(title: string, target: DataRows | null, golden: DataRows | null): HTMLElement {
  const t = el("table", "stats");
  t.appendChild(el("tr", undefined, undefined,
    [el("th", undefined, title), el("th", undefined, "field"), el("th", undefined, "target"),
      el("th", undefined, "golden")]));
  const tRows = Object.entries(target ?? {});
  const gRows = Object.entries(golden ?? {});
  // Rows pair by position: both sides name a row after their own node.
  for (let i = 0; i < Math.max(tRows.length, gRows.length); i++) {
    const [tName, tFields] = tRows[i] ?? ["", {}];
    const [gName, gFields] = gRows[i] ?? ["", {}];
    const head = el("tr", "rowname");
    const name = el("td", undefined, tName || gName);
    name.colSpan = 4;
    head.appendChild(name);
    t.appendChild(head);
    const keys = [...Object.keys(tFields)];
    for (const k of Object.keys(gFields)) if (!keys.includes(k)) keys.push(k);
    for (const k of keys) {
      t.appendChild(el("tr", undefined, undefined, [el("td"), el("td", undefined, k),
        el("td", undefined, tFields[k] ?? ""), el("td", undefined, gFields[k] ?? "")]));
    }
  }
  return t;
}

function section(title: string, body: HTMLElement): HTMLElement[] {
  return [el("h3", undefined, title), body];
}

export function showNode(panel: HTMLElement, target: NodeDetail | null,
  golden: NodeDetail | null): void {
  clear(panel);
  const main = target ?? golden;
  if (!main) return;
  const head = el("div", "node-head", undefined, [swatch(main.color), el("strong", "node-name",
    ` ${main.name}`)]);
  panel.appendChild(head);
  const facts = el("table", "facts");
  const fact = (k: string, v: string) =>
    facts.appendChild(el("tr", undefined, undefined, [el("th", undefined, k), el("td", undefined, v)]));
  fact("type", ["module", "API"][main.type] ?? (main.type === 9 ? "API collection" : String(main.type)));
  fact("precision", main.precision === null ? "—" : String(main.precision));
  fact("matched", target && golden ? `${target.name} ↔ ${golden.name}` : "unmatched");
  fact("children", String(main.children));
  fact("micro-step", String(main.micro_step));
  panel.appendChild(facts);
  const finding = target?.suspect ?? golden?.suspect ?? null;
  if (finding) {
    const f = el("table", "finding");
    for (const [k, v] of Object.entries(finding)) {
      f.appendChild(el("tr", undefined, undefined, [el("th", undefined, k),
        el("td", undefined, typeof v === "string" ? v : JSON.stringify(v))]));
    }
    for (const e of section("Finding", f)) panel.appendChild(e);
  }
  for (const e of section("Inputs", statsTable("input", target?.input ?? null,
    golden?.input ?? null))) panel.appendChild(e);
  for (const e of section("Outputs", statsTable("output", target?.output ?? null,
    golden?.output ?? null))) panel.appendChild(e);
  for (const [label, d] of [["Parent chain (target)", target], ["Parent chain (golden)", golden]] as
    [string, NodeDetail | null][]) {
    if (d) for (const e of section(label, el("pre", "chain", [...d.parent_chain, d.name].join("\n  › "))))
      panel.appendChild(e);
  }
  for (const [label, d] of [["Stack (target)", target], ["Stack (golden)", golden]] as
    [string, NodeDetail | null][]) {
    if (d && d.stack.length) {
      for (const e of section(label, el("pre", "stack", d.stack.join("\n")))) panel.appendChild(e);
    }
  }
}
