#include "graph/graph_pair.h"

#include <algorithm>
#include <cmath>
#include <future>

#include "base/worker_pool.h"
#include "graph/graph_build.h"

namespace numprobe::graph {
namespace {

int64_t where_step(const RankLocation& w) {
  return w.step < 0 ? 0 : w.step;
}
int64_t where_rank(const RankLocation& w) {
  return w.rank < 0 ? 0 : w.rank;
}

void match_graphs(const PairResult& p, SideGraph& t, SideGraph& g) {
  t.match.assign(t.graph.nodes.size(), kNoNode);
  g.match.assign(g.graph.nodes.size(), kNoNode);
  std::vector<uint32_t> golden_node_of_entry(p.golden.dump.entries.size(), kNoNode);
  for (uint32_t n = 0; n < g.graph.nodes.size(); ++n) {
    const int64_t e = g.graph.nodes[n].entry;
    if (e >= 0) golden_node_of_entry[static_cast<size_t>(e)] = n;
  }
  for (uint32_t n = 0; n < t.graph.nodes.size(); ++n) {
    const GraphNode& node = t.graph.nodes[n];
    uint32_t other = kNoNode;
    if (node.entry >= 0) {
      const auto e = static_cast<size_t>(node.entry);
      const int64_t ge = e < p.entries.golden_of.size() ? p.entries.golden_of[e] : -1;
      if (ge >= 0) other = golden_node_of_entry[static_cast<size_t>(ge)];
    } else {
      other = g.graph.find(node.name);
      if (other != kNoNode && g.graph.nodes[other].entry >= 0) other = kNoNode;
    }
    if (other == kNoNode || g.match[other] != kNoNode) continue;
    t.match[n] = other;
    g.match[other] = n;
  }
}

}  // namespace

std::unique_ptr<GraphPair> graph_pair(const PairResult& p) {
  auto gp = std::make_unique<GraphPair>();
  gp->step = where_step(p.target_where);
  gp->rank = where_rank(p.target_where);
  gp->compare = &p;
  // The two graphs are independent and each takes seconds at a million entries: the golden's is
  // built on a second thread while this one builds the target's.
  std::future<Graph> golden_graph = run_in_background([&p] { return build_graph(p.golden); });
  gp->target.graph = build_graph(p.target);
  gp->target.dump = &p.target;
  gp->target.rows = index_rows(p.target_rows, p.target.dump.entries.size());
  gp->golden.emplace();
  SideGraph& g = *gp->golden;
  g.graph = golden_graph.get();
  g.dump = &p.golden;
  g.rows = index_rows(p.golden_rows, p.golden.dump.entries.size());
  link_results(p, gp->target.rows, g.rows);
  match_graphs(p, gp->target, g);
  SideGraph& t = gp->target;
  t.precision.assign(t.graph.nodes.size(), std::nan(""));
  for (uint32_t n = 0; n < t.graph.nodes.size(); ++n) {
    if (t.match[n] == kNoNode) continue;
    const int64_t e = t.graph.nodes[n].entry;
    if (e < 0) continue;  // data-less modules stay blank, as in msprobe
    std::optional<double> v = precision_of(p, t.rows, e);
    if (v) t.precision[n] = *v;
  }
  // Names are found by now; the maps go (a million-entry pair's graphs hold a node per entry).
  for (Graph* graph : {&t.graph, &g.graph})
    std::unordered_map<std::string_view, uint32_t>().swap(graph->index);
  // An API collection shows its worst API (msprobe: the largest value, the smallest in md5 mode).
  const bool md5 = p.mode == CompareMode::kMd5;
  for (uint32_t n = 0; n < t.graph.nodes.size(); ++n) {
    const GraphNode& c = t.graph.nodes[n];
    if (c.type != NodeType::kApiCollection) continue;
    double v = md5 ? 1 : 0;
    for (uint32_t k : c.children) {
      const double x = t.precision[k];
      if (!std::isnan(x)) v = md5 ? std::min(v, x) : std::max(v, x);
    }
    t.precision[n] = v;
  }
  return gp;
}

std::unique_ptr<GraphPair> single_graph(const RankLocation& where) {
  auto gp = std::make_unique<GraphPair>();
  gp->own_dump = std::make_unique<RankDump>(load_rank_dump(where));
  gp->own_rows = std::make_unique<RowSet>(flatten_rows(gp->own_dump->dump));
  gp->own_dump->dump.release_values();
  gp->step = where_step(where);
  gp->rank = where_rank(where);
  gp->target.graph = build_graph(*gp->own_dump);
  gp->target.dump = gp->own_dump.get();
  gp->target.rows = index_rows(*gp->own_rows, gp->own_dump->dump.entries.size());
  gp->target.match.assign(gp->target.graph.nodes.size(), kNoNode);
  gp->target.precision.assign(gp->target.graph.nodes.size(), std::nan(""));
  return gp;
}

}  // namespace numprobe::graph
