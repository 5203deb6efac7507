// What `numprobe merge` and a merging shard (`compare --shard ... --merge`) share: finding the
// shards' summaries under the directories given, and writing and reporting the merged summary.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "numprobe/compare/shard.h"

namespace numprobe::cli {

// --shard's value: "K/N", or "auto" for the launcher's environment (an error when none is set).
ShardSpec resolve_shard(const std::string& value);

ShardSummaryFile read_shard_summary(const std::filesystem::path& p);

// Each input is a shard's summary.json or graph.vis.db, a shard's directory, or a directory holding
// shard-K-of-N directories (those without their files yet are left out: the merges report them
// missing). Throws InputError for an input that holds none.
struct ShardOutputs {
  std::vector<ShardSummaryFile> summaries;
  std::vector<std::string> graphs;  // .vis.db paths
};
ShardOutputs collect_shard_outputs(const std::vector<std::string>& inputs);

// Writes out/summary.json and prints the result; returns the exit status: 0, or 1 when a shard is
// missing or nothing was compared (a merge that compared nothing never says all clear).
int write_merged_summary(const MergeResult& r, const std::string& out, double secs);

}  // namespace numprobe::cli
