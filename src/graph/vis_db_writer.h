// Writes graphs into msprobe's .vis.db SQLite schema (vis_db_schema.h, docs/graph.md).
#pragma once

#include <string>
#include <vector>

#include "graph/graph_pair.h"

namespace numprobe::graph {

struct VisDbContent {
  std::vector<const GraphPair*> graphs;  // one per (step, rank)
  CompareMode mode = CompareMode::kStatistics;
  bool compare = true;               // false: build graphs (target side only)
  std::vector<std::string> notes;    // numprobe_meta "notes"
  std::string findings_json = "{}";  // numprobe_meta "findings" (docs/graph.md)
  std::string shard_json;            // numprobe_meta "shard" of a graph built as a shard, or ""
};

// Writes `path` through path + ".tmp<pid>", renamed when complete, so a reader never sees half a
// file. Throws Error naming the file on any SQLite or I/O failure.
void write_vis_db(const std::string& path, const VisDbContent& content);

}  // namespace numprobe::graph
