// The two graphs of one (step, rank) compare, matched node to node with compare's own pairing, or
// the single graph of a build.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph_model.h"
#include "graph/node_data.h"
#include "numprobe/compare.h"

namespace numprobe::graph {

struct SideGraph {
  Graph graph;
  SideRows rows;
  std::vector<uint32_t> match;     // per node: the matched node of the other side, or kNoNode
  std::vector<double> precision;   // per node (target side of a compare): NaN = none
  const RankDump* dump = nullptr;  // stack.json, dump_data_dir
};

struct GraphPair {
  int64_t step = 0, rank = 0;
  SideGraph target;
  std::optional<SideGraph> golden;  // absent for a build
  const PairResult* compare = nullptr;
  // A build keeps its own rows and dump (a compare's live in the PairResult).
  std::unique_ptr<RankDump> own_dump;
  std::unique_ptr<RowSet> own_rows;
};

// Both graphs of a compared pair. Entry nodes are matched through the compare's entry pairing
// (exact, renumbered, fuzzy, mapped: PairResult::entries); nodes without dump data (the root,
// Apis_Between_Modules.N, modules the dump has no entry for) by equal names.
std::unique_ptr<GraphPair> graph_pair(const PairResult& p);
// The graph of one dump (loaded here; rows flattened before the entry bodies are released).
std::unique_ptr<GraphPair> single_graph(const RankLocation& where);

}  // namespace numprobe::graph
