// `numprobe graph`: dumps -> graphs -> one .vis.db (docs/graph.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "numprobe/compare.h"
#include "numprobe/compare/shard.h"

namespace numprobe::graph {

struct GraphRunOptions {
  std::string target;
  std::string golden;  // empty: build the target's graph alone
  // A directory (the file is named compare_<time>.vis.db / build_<time>.vis.db in it, as msprobe
  // names it), or a path ending in .vis.db.
  std::string out;
  const CompareMappings* mappings = nullptr;
  unsigned threads = 0;
  std::vector<std::string> notes;  // the caller's (an unsupported parallel_merge, ...)
  // Build only this shard's ranks, into <out>/shard-K-of-N/graph.vis.db (docs/scale.md).
  const ShardSpec* shard = nullptr;
};

struct GraphRunResult {
  std::string path;
  std::vector<std::string> notes;
  size_t graphs = 0, nodes = 0;
  CompareReport report;  // compare graphs: the compare behind them
  double compare_s = 0, write_s = 0;
};

GraphRunResult run_graph(const GraphRunOptions& opt);

}  // namespace numprobe::graph
