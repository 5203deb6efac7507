// The merge of a graph built as shards (`numprobe graph --shard K/N`, docs/scale.md): each shard's
// .vis.db holds the graphs of its own ranks, with numprobe_meta "shard" = {"index", "count",
// "units"}; the merge copies every shard's nodes and stacks into one .vis.db (row ids carry their
// graph's step and rank, so they never collide), unites tb_config's rank and step lists, notes and
// findings, and names the shards that are missing.
#pragma once

#include <string>
#include <vector>

namespace numprobe::graph {

struct VisDbMergeResult {
  std::string path;
  int count = 0;
  std::vector<int> present, missing;
  std::vector<std::string> missing_ranks;  // "shard 3/4: ranks 16-23"
  long long nodes = 0;
};

// Writes `out` (through a temporary renamed into place). Throws InputError naming the shard file
// that is not a shard's graph, and Error for shards of different graphs or one given twice.
VisDbMergeResult merge_vis_dbs(const std::vector<std::string>& shards, const std::string& out);

// numprobe_meta "shard" of a shard's graph.
std::string shard_meta_json(int index, int count, const std::vector<std::string>& units);

}  // namespace numprobe::graph
