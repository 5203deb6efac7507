// The server's JSON API (docs/graph.md "The viewer's HTTP API"), typed.
export type Side = "target" | "golden";

export interface ColorBin { color: string; value: number[]; description: string; }
export interface Finding { node: string; side?: Side; reason?: string; [k: string]: unknown; }
export interface GraphFindings { first_divergence?: Finding | null; suspects?: Finding[]; }
export interface Meta {
  file: string; graph_type: string; task: string; mode: string;
  steps: number[]; ranks: number[]; micro_steps: number;
  colors: ColorBin[]; findings: Record<string, GraphFindings>; notes: string[]; sides: Side[];
}
export interface NodeSummary {
  name: string; type: number; children: number; precision: number | null;
  color: string | null; matched: boolean; suspect: number | null;
}
export type DataRows = Record<string, Record<string, string>>;
export interface NodeDetail extends Omit<NodeSummary, "suspect"> {
  parent_chain: string[]; matched_link: string[]; micro_step: number;
  input: DataRows; output: DataRows; stack: string[]; suspect: Finding | null;
}
export interface Hit { name: string; path: string[]; color: string | null; }
export interface Hits { results: Hit[]; truncated: boolean; }

// Which graph a query is about; micro is null for all micro-steps.
export interface GraphSel { step: number; rank: number; micro: number | null; }

async function get<T>(path: string, params: Record<string, string | number | null>): Promise<T> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null) q.set(k, String(v));
  const res = await fetch(`${path}?${q.toString()}`);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body as T;
}

function base(g: GraphSel, side: Side): Record<string, string | number | null> {
  return { step: g.step, rank: g.rank, side };
}

export const api = {
  meta: () => get<Meta>("/api/meta", {}),
  children: (g: GraphSel, side: Side, node: string | null) =>
    get<{ nodes: NodeSummary[]; total: number }>("/api/children",
      { ...base(g, side), node, micro_step: g.micro }),
  node: (g: GraphSel, side: Side, node: string) =>
    get<NodeDetail>("/api/node", { ...base(g, side), node }),
  search: (g: GraphSel, side: Side, q: string) =>
    get<Hits>("/api/search", { ...base(g, side), q, limit: 200 }),
  filter: (g: GraphSel, side: Side, kind: string) =>
    get<Hits>("/api/filter", { ...base(g, side), kind, limit: 500 }),
};
