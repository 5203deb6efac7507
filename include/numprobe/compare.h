// `numprobe compare`: two dumps (file, rank dir, step dir or root) -> per (step, rank) pair a table
// of rows with msprobe's metrics plus numprobe's Status / Match / Reason, and a summary.
//
// Verdicts today use msprobe's thresholds with its bugs fixed (docs/compare.md). The noise-aware
// per-op tolerance model of the compare milestone will replace them; the first-divergence rule
// (first entry whose inputs agree while an output does not) already runs on these verdicts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "numprobe/compare_match.h"
#include "numprobe/compare_rows.h"
#include "numprobe/compare_stats.h"
#include "numprobe/compare_tensor.h"
#include "numprobe/dump_tree.h"

namespace numprobe {

enum class CompareMode : uint8_t { kTensor, kStatistics, kMd5 };
const char* compare_mode_name(CompareMode m);

enum class RowStatus : uint8_t { kPass, kWarning, kError, kUnmatched };
const char* row_status_name(RowStatus s);

struct RowResult {
  RowPair pair;
  RowStatus status = RowStatus::kUnmatched;
  std::string reason;  // machine-readable code, "" when pass
  StatisticsMetrics stats;
  TensorMetrics tensor;
  std::string message;  // msprobe-style Err_message
};

struct FirstDivergence {
  std::string entry;      // dump.json key
  std::string row;        // first offending row
  std::string direction;  // forward | backward | parameters_grad
  std::string module;     // enclosing module from construct.json, "" if unknown
  std::string reason;     // outputs_diverge | inputs_already_differ
  size_t row_index = 0;   // into PairResult::rows: the evidence
  // The noise-aware judgement (compare_noise.h): worst input and output row discrepancy of the
  // entry, and the noise tolerance they were held against.
  double input_discrepancy = 0, output_discrepancy = 0, tolerance = 0;
};

struct PairResult {
  RankLocation target_where, golden_where;
  CompareMode mode = CompareMode::kStatistics;
  RankDump target, golden;
  std::vector<CompareRow> target_rows, golden_rows;
  std::vector<RowResult> rows;
  size_t matched = 0, pass = 0, warning = 0, error = 0, unmatched_target = 0, unmatched_golden = 0;
  std::optional<FirstDivergence> first_divergence;
};

struct CompareReport {
  std::vector<PairResult> pairs;
  std::vector<std::string> problems;  // steps/ranks present on one side only, ...
};

// Pairs rank dumps by (step, rank id / label), detects the mode, compares. Throws InputError when
// the two sides' tasks are incompatible (e.g. md5 vs statistics).
CompareReport compare_dumps(const std::string& target, const std::string& golden);
// One pair, already loaded.
void compare_pair(PairResult& p);

// msprobe's compare.json: {"npu_path", "bench_path", "stack_path"?, "is_print_compare_log"?}.
// Throws InputError naming the file for malformed JSON, wrong types or unknown fields.
struct CompareInput {
  std::string target, golden;
  bool stack = false;
};
CompareInput parse_compare_input(std::string_view text, const std::string& name);

// Writers. CSV cells that start like a spreadsheet formula are prefixed with "'".
std::string render_compare_csv(const PairResult& p, bool with_stack);
std::string render_summary_json(const CompareReport& r);

}  // namespace numprobe
