// Building the graph of one rank dump from its construct.json and dump.json (graph_model.h).
#pragma once

#include "graph/graph_model.h"
#include "numprobe/dump_tree.h"

namespace numprobe::graph {

// msprobe's model name for the root.
inline constexpr std::string_view kRootName = "DefaultModel";

// The graph of `d`. Without construct.json (an L1 dump) every entry hangs from the root and a note
// says so. The dump's strings and construct table must outlive the graph (names point into them).
Graph build_graph(const RankDump& d);

}  // namespace numprobe::graph
