// `numprobe compare`: two dumps (file, rank dir, step dir or root) -> per (step, rank) pair a table
// of rows with msprobe's metrics plus numprobe's Status / Match / Reason, and a summary.
//
// Row verdicts use msprobe's thresholds with its bugs fixed (docs/compare.md). The suspects (the
// first entry whose inputs agree while an output does not) are judged against noise-aware per-op
// tolerances (src/compare/judgement.h, docs/compare.md "First divergence").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "numprobe/compare/mapping.h"
#include "numprobe/compare/pair.h"
#include "numprobe/compare/rows.h"
#include "numprobe/compare/stats_metrics.h"
#include "numprobe/compare/tensor_metrics.h"
#include "numprobe/dump_tree.h"

namespace numprobe {

enum class CompareMode : uint8_t { kTensor, kStatistics, kMd5 };
const char* compare_mode_name(CompareMode m);

enum class RowStatus : uint8_t { kPass, kWarning, kError, kUnmatched };
const char* row_status_name(RowStatus s);

// One compared row. Kept small (a 1M-row compare holds a million): the statistics diffs are
// computed from the two rows when needed (row_statistics), and reasons are static codes.
struct RowResult {
  RowPair pair;
  RowStatus status = RowStatus::kUnmatched;
  std::string_view reason;  // machine-readable code (static storage), "" when pass
  TensorMetrics tensor;
  std::string message;  // msprobe-style Err_message
  // A known difference in how the two tools record this row (inplace_module_inputs.h), not in the
  // computation: never evidence of a divergence.
  bool excused = false;
};

// One suspect of a pair (judgement.h); the first one is the pair's first divergence.
struct FirstDivergence {
  std::string entry;      // dump.json key (the golden's for an entry only the golden has)
  std::string row;        // first offending row
  std::string direction;  // forward | backward | parameters_grad
  std::string module;     // enclosing module from construct.json, "" if unknown
  // structure_differs | dtype_differs | args_differ | parameters_differ | inputs_already_differ
  // | outputs_diverge
  std::string reason;
  std::string source;    // inputs_already_differ: "data"; parameters_differ: "parameters"
  std::string op_class;  // op_class_name()
  std::string regime;    // regime_name() when it was judged: what the floor assumed
  size_t row_index = 0;  // into PairResult::rows: the evidence
  // Worst input and output row discrepancy of the entry (relative, noise.h), and the
  // tolerance the output was held against (the floor of its class, dtype and regime).
  double input_discrepancy = 0, output_discrepancy = 0, tolerance = 0;
  double score = 0;  // (0, 1]: how sure; structural findings 1, numeric ones by their margin
};

// A module whose two runs call other APIs for its work (fused against unfused kernels, eager
// against sdpa attention; issue 36), judged as a whole: by what its calls produce where something
// consumes it, its own outputs included.
struct ImplementationDiffers {
  std::string module;         // target module entry ("Module.layers.0.attn.Attention.forward.0")
  std::string golden_module;  // its golden partner
  std::vector<std::string> target_calls, golden_calls;  // its direct API calls, counters dropped
  // The results differ beyond the noise the module's inputs explain: its calls are then judged
  // one by one, as any other entries, and the module is a suspect itself when they name nothing
  // at or before where its results differed (at the call that made the differing tensor).
  bool diverges = false;
  // The worst result seen (relative, noise.h); for a module that diverges, the one that broke it.
  double output_discrepancy = 0;
  double tolerance = 0;  // the floor it was held against
};

struct PairResult {
  RankLocation target_where, golden_where;
  CompareMode mode = CompareMode::kStatistics;
  RankDump target, golden;
  RowSet target_rows, golden_rows;  // point into target/golden's string pools
  std::vector<RowResult> rows;
  EntryPairing entries;  // which golden entry each target entry was paired with (rows follow it)
  size_t matched = 0, pass = 0, warning = 0, error = 0, unmatched_target = 0, unmatched_golden = 0;
  std::optional<FirstDivergence> first_divergence;  // == suspects.front() when there is one
  std::vector<FirstDivergence> suspects;            // up to 5, in execution order
  // regime_name(): at the first divergence, else what the whole pair showed
  std::string regime;
  std::vector<ImplementationDiffers> implementations;  // judged as a whole, in target order
  bool mapped = false;                   // user mappings paired rows (-dm/-cm/-am/-lm)
  GeneratedMappings generated_mappings;  // -lm: what the layer mapping decided (written as yaml)
};

// Across the ranks of one step: which rank's first divergence is the origin. A rank whose first
// divergence is a collective (Distributed.*: its local inputs agreed, its output did not) received
// diverged data from another rank and is not the origin; among the others, the one with the fewest
// collectives before its divergence diverged first in collective time (ties: the lower rank).
// When every rank's first divergence is the same collective, inputs agreeing everywhere, the
// collective itself is the origin (collective_itself).
struct CrossRankOrigin {
  int64_t step = -1;
  int64_t pair = -1;  // index into CompareReport::pairs
  size_t collectives_before = 0;
  bool collective_itself = false;
  std::vector<int64_t> received;  // pairs whose first divergence is a collective
};

struct CompareReport {
  std::vector<PairResult> pairs;
  std::vector<std::string> problems;     // steps/ranks present on one side only, ...
  std::vector<CrossRankOrigin> origins;  // steps with a divergence on at least one rank
};

// How much a compare compared. A pair that paired no row, or fewer rows than it left without a
// partner, must say so: "no divergence" is a finding about compared rows only.
enum class Coverage : uint8_t {
  kCompared,         // most rows paired
  kMostlyUnmatched,  // fewer rows paired than left without a partner (on either side)
  kNothingCompared,  // no row paired (or, for a report, no pair or no pair with a paired row)
};
const char* coverage_name(Coverage c);  // "compared" | "mostly_unmatched" | "nothing_compared"
Coverage pair_coverage(const PairResult& p);
// The report's worst: nothing_compared when no pair paired a row, mostly_unmatched when some pair
// did not compare most of its rows (or paired nothing), compared otherwise.
Coverage report_coverage(const CompareReport& rep);

// Pairs rank dumps by (step, rank id / label), detects the mode, compares. Throws InputError when
// the two sides' tasks are incompatible (e.g. md5 vs statistics).
// Pairs run on up to `threads` threads (0: the hardware's); threads beyond the number of pairs
// load the two sides and judge rows within a pair.
// `mappings` (optional): user mappings applied to every pair (compare/mapping.h).
CompareReport compare_dumps(const std::string& target, const std::string& golden,
                            unsigned threads = 0, const CompareMappings* mappings = nullptr);
// Fills report.origins from the pairs' first divergences.
void find_cross_rank_origins(CompareReport& report);

// What came before a rank's first dumped step when that step is not step 0 (msprobe's `step: [N]`).
// kUnknown, compare_dumps' assumption: the runs may have drifted by any amount in the steps nobody
// dumped, so that step's parameters are no evidence. kBitwise: the caller knows they agreed bit
// for bit (locate's first round dumped them), so its parameters must be the same bits.
enum class PriorSteps : uint8_t { kUnknown, kBitwise };
// Judges each rank's first dumped step after step 0 again under `prior`, and the origins.
void judge_first_steps(CompareReport& report, PriorSteps prior);
// One pair, already loaded; its rows are judged on up to `threads` threads (the result does not
// depend on the count). Frees the dumps' entry bodies (DumpFile::release_values) once flattened.
void compare_pair(PairResult& p, const CompareMappings* mappings = nullptr, unsigned threads = 1);

// msprobe's compare.json: {"npu_path", "bench_path", "stack_path"?, "is_print_compare_log"?,
// "data_mapping"?, "cell_mapping"?, "api_mapping"?, "layer_mapping"?}; a mapping key holds a
// file path, or true for the flag without a file (false / null: off).
// Throws InputError naming the file for malformed JSON, wrong types or unknown fields.
// `parallel_merge` (msprobe graph's shard merge) is read and flagged, never applied: callers say
// it is unsupported. `golden_optional`: bench_path may be left out (a graph build of one dump).
struct CompareInput {
  std::string target, golden;
  bool stack = false;
  bool parallel_merge = false;
  MappingOptions mappings;
};
CompareInput parse_compare_input(std::string_view text, const std::string& name,
                                 bool golden_optional = false);

// The result table behind the CSV and XLSX writers (src/compare/compare_xlsx.h): msprobe's columns
// for the mode, one row per RowResult. Texts are final: text that a spreadsheet would run as a
// formula (first character =, +, -, @, %, tab, CR or a full-width form of one) carries a leading
// "'".
struct TableCell {
  std::string text;
  bool numeric = false;  // a metric/statistic column: a number, "nan", "inf", "N/A", "1.5%", ...
};
std::vector<std::string> compare_table_header(const PairResult& p, bool with_stack);
// Sets `cells` to row r of p, as many as the header has (their strings' storage is reused).
void compare_table_row(const PairResult& p, const RowResult& r, bool with_stack,
                       std::vector<TableCell>& cells);
// The "Requires_grad Consistent" column: both sides present with the same requires_grad.
bool requires_grad_consistent(const PairResult& p, const RowResult& r);

// msprobe's statistics diffs of a row whose two sides are tensors (default-constructed, no diffs,
// for every other row).
StatisticsMetrics row_statistics(const PairResult& p, const RowResult& r);

// Writers. The CSV holds the table above, RFC 4180 quoted.
std::string render_compare_csv(const PairResult& p, bool with_stack);
// The same CSV streamed to path (through path.tmp, renamed when complete); throws Error naming
// the file on I/O errors.
void write_compare_csv(const std::string& path, const PairResult& p, bool with_stack);
std::string render_summary_json(const CompareReport& r);

}  // namespace numprobe
