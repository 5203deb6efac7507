// One hierarchy pane, virtualized: the pane keeps a flat list of its visible rows (the expanded
// part of the tree in preorder) and puts into the DOM only the rows inside the viewport, at
// absolute positions of ROW_H pixels, over a spacer as tall as the whole list. Children are
// fetched per expanded node, never the whole graph.
import { api, GraphSel, NodeSummary, Side } from "./api";
import { clear, el, swatch } from "./dom";

export const ROW_H = 22;
const OVERSCAN = 10;

export interface TreeNode {
  info: NodeSummary;
  depth: number;
  parent: TreeNode | null;
  children: TreeNode[] | null;  // null until fetched
  expanded: boolean;
}

export class TreePane {
  private rows: TreeNode[] = [];
  private byName = new Map<string, TreeNode>();
  private selected: TreeNode | null = null;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private graph: GraphSel | null = null;
  private generation = 0;  // bumps on reload, so a late response for an old graph is dropped
  onSelect: (n: TreeNode) => void = () => {};

  constructor(readonly side: Side, root: HTMLElement) {
    this.viewport = root.querySelector(".viewport") as HTMLElement;
    this.spacer = root.querySelector(".spacer") as HTMLElement;
    this.viewport.addEventListener("scroll", () => this.render());
    window.addEventListener("resize", () => this.render());
    this.viewport.addEventListener("click", (ev) => this.onClick(ev));
    this.viewport.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  async load(graph: GraphSel): Promise<void> {
    this.graph = graph;
    const gen = ++this.generation;
    const { nodes } = await api.children(graph, this.side, null);
    if (gen !== this.generation) return;
    this.byName.clear();
    this.selected = null;
    this.rows = nodes.map((info) => this.adopt(info, null));
    this.viewport.scrollTop = 0;
    this.render();
    // One level open to start with: a model's root alone says little.
    if (this.rows.length === 1 && this.rows[0].info.children > 0) await this.expand(this.rows[0]);
  }

  get visibleCount(): number { return this.rows.length; }
  get selectedName(): string | null { return this.selected ? this.selected.info.name : null; }

  private adopt(info: NodeSummary, parent: TreeNode | null): TreeNode {
    const n: TreeNode = { info, parent, depth: parent ? parent.depth + 1 : 0, children: null,
      expanded: false };
    this.byName.set(info.name, n);
    return n;
  }

  async expand(n: TreeNode): Promise<void> {
    if (n.expanded || n.info.children === 0 || !this.graph) return;
    if (!n.children) {
      const gen = this.generation;
      const { nodes } = await api.children(this.graph, this.side, n.info.name);
      if (gen !== this.generation) return;
      n.children = nodes.map((info) => this.adopt(info, n));
    }
    if (n.expanded) return;  // expanded meanwhile by another call
    n.expanded = true;
    const at = this.rows.indexOf(n);
    if (at >= 0) this.rows.splice(at + 1, 0, ...this.flatten(n.children));
    this.render();
  }

  collapse(n: TreeNode): void {
    if (!n.expanded) return;
    n.expanded = false;
    const at = this.rows.indexOf(n);
    if (at < 0) return;
    let end = at + 1;
    while (end < this.rows.length && this.rows[end].depth > n.depth) end++;
    this.rows.splice(at + 1, end - at - 1);
    this.render();
  }

  // The visible rows of a list of siblings and their expanded descendants, in preorder.
  private flatten(list: TreeNode[]): TreeNode[] {
    const out: TreeNode[] = [];
    const walk = (ns: TreeNode[]) => {
      for (const c of ns) {
        out.push(c);
        if (c.expanded && c.children) walk(c.children);
      }
    };
    walk(list);
    return out;
  }

  // Expands the ancestors of path's last name (path: root ... name) and selects it.
  async reveal(path: string[], notify: boolean): Promise<boolean> {
    if (path.length === 0) return false;
    for (const name of path.slice(0, -1)) {
      const n = this.byName.get(name);
      if (!n) return false;
      await this.expand(n);
    }
    const target = this.byName.get(path[path.length - 1]);
    if (!target) return false;
    this.select(target, notify);
    return true;
  }

  select(n: TreeNode, notify: boolean): void {
    this.selected = n;
    const i = this.rows.indexOf(n);
    if (i >= 0) {
      const top = i * ROW_H, h = this.viewport.clientHeight;
      if (top < this.viewport.scrollTop || top + ROW_H > this.viewport.scrollTop + h) {
        this.viewport.scrollTop = Math.max(0, top - h / 3);
      }
    }
    this.render();
    if (notify) this.onSelect(n);
  }

  render(): void {
    this.spacer.style.height = `${this.rows.length * ROW_H}px`;
    const top = this.viewport.scrollTop, h = this.viewport.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((top + h) / ROW_H) + OVERSCAN);
    clear(this.spacer);
    for (let i = first; i < last; i++) this.spacer.appendChild(this.rowElement(this.rows[i], i));
  }

  private rowElement(n: TreeNode, i: number): HTMLElement {
    const info = n.info;
    const row = el("div", "row");
    row.style.top = `${i * ROW_H}px`;
    row.style.paddingLeft = `${4 + n.depth * 14}px`;
    row.dataset.index = String(i);
    row.dataset.name = info.name;
    if (!info.matched) row.classList.add("unmatched");
    if (n === this.selected) row.classList.add("selected");
    const twisty = el("span", "twisty", info.children > 0 ? (n.expanded ? "▾" : "▸") : "");
    row.appendChild(twisty);
    row.appendChild(swatch(info.color));
    row.appendChild(el("span", "name", info.name));
    if (info.children > 0) row.appendChild(el("span", "count", `(${info.children})`));
    if (info.suspect !== null) {
      row.appendChild(el("span", "suspect", info.suspect === 0 ? "first divergence"
        : `suspect ${info.suspect + 1}`));
    }
    row.title = info.precision === null ? info.name : `${info.name}\nprecision ${info.precision}`;
    return row;
  }

  private rowAt(ev: Event): TreeNode | null {
    const row = (ev.target as HTMLElement).closest(".row") as HTMLElement | null;
    if (!row || row.dataset.index === undefined) return null;
    return this.rows[Number(row.dataset.index)] ?? null;
  }

  private onClick(ev: MouseEvent): void {
    const n = this.rowAt(ev);
    if (!n) return;
    if ((ev.target as HTMLElement).classList.contains("twisty")) {
      void (n.expanded ? Promise.resolve(this.collapse(n)) : this.expand(n));
      return;
    }
    this.select(n, true);
    this.viewport.focus();
  }

  // Arrows: up/down move the selection, right expands, left collapses or goes to the parent.
  private onKey(ev: KeyboardEvent): void {
    const n = this.selected;
    if (!n) return;
    const i = this.rows.indexOf(n);
    if (ev.key === "ArrowDown" && i + 1 < this.rows.length) this.select(this.rows[i + 1], true);
    else if (ev.key === "ArrowUp" && i > 0) this.select(this.rows[i - 1], true);
    else if (ev.key === "ArrowRight") void this.expand(n);
    else if (ev.key === "ArrowLeft") {
      if (n.expanded) this.collapse(n);
      else if (n.parent) this.select(n.parent, true);
    } else return;
    ev.preventDefault();
  }
}
