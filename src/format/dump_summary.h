// What `numprobe info` reports about a rank dump: counts by prefix and direction, tensors, files
// present, and problems found. Lives in the engine so every front end reports the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numprobe/dump_tree.h"

namespace numprobe {

struct PrefixCount {
  std::string prefix;
  uint64_t forward = 0, backward = 0, parameters_grad = 0, other = 0;
  uint64_t total() const { return forward + backward + parameters_grad + other; }
};

struct RankSummary {
  RankLocation where;
  std::string framework, task, level;
  uint64_t entries = 0;
  uint64_t forward = 0, backward = 0, parameters_grad = 0, debug = 0, unnamed = 0;
  std::vector<PrefixCount> prefixes;  // in order of first appearance
  uint64_t tensors = 0;
  uint64_t tensors_with_md5 = 0;
  uint64_t tensors_with_data = 0;  // leaves naming a data file
  uint64_t data_files_missing = 0;
  uint64_t nonfinite_tensors = 0;  // a statistic is NaN or +-Inf
  std::string first_nonfinite_entry;
  uint64_t unknown_dtypes = 0;
  uint64_t stack_entries = 0;
  uint64_t construct_nodes = 0;
  bool recovered_from_journal = false;
  std::vector<std::string> problems;
};

// check_data_files: stat every data_name under dir/dump_tensor_data.
RankSummary summarize_rank(const RankDump& d, bool check_data_files = true);

}  // namespace numprobe
