// msprobe's config.json for capture (reference: msprobe.md §1.2), parsed without torch.
//
// The parser is strict where msprobe is lax, so that a typo never silently changes what is dumped:
// unknown fields (top level, or inside the active task's section), wrong JSON types, duplicate keys
// and out-of-range values are errors. Every error is an InputError whose message names the source
// and the field, e.g. `config.json: field "level": "L3" is not one of L0, L1, L2, mix, debug`.
// Sections of tasks other than the active one are not inspected (msprobe ships one file holding
// every task's section). Fields msprobe defines but capture does not use (enable_dataloader,
// risk_level, check_mode, device, bench_path, diff_nums, slice) are type-checked, then ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "capture/free_benchmark_config.h"

namespace numprobe::capture {

// kFreeBenchmark is run by the Python torch front (numprobe/free_benchmark.py) and kGradProbe by
// its monitor(model), not by a CaptureSession, which refuses both.
enum class Task { kStatistics, kTensor, kOverflowCheck, kStructure, kFreeBenchmark, kGradProbe };
enum class Level { kL0, kL1, kMix, kL2, kDebug };
enum class SummaryMode { kStatistics, kMd5 };

// Which halves of a selected call are written. msprobe rule (BaseDataProcessor
// _get_allowed_data_mode): an axis (forward/backward, input/output) none of whose values is named
// keeps both values, so ["forward"] = forward input+output, ["input"] = forward+backward inputs.
struct DataMode {
  bool forward = true, backward = true, input = true, output = true;
};

// The grad_probe section (msprobe GradToolConfig): per-parameter gradient statistics at every
// optimizer step, not a capture of calls (src/grad_probe, docs/capture.md "grad_probe").
enum class GradLevel { kL0, kL1, kL2 };
struct GradProbeOptions {
  GradLevel level = GradLevel::kL1;
  std::vector<std::string> param_list;  // exact parameter names; empty = every parameter
  // Strictly ascending, non-empty, within int64's range (msprobe check_bounds); bounds_text holds
  // each as Python prints the JSON value (an integer as written, a float as repr()), which is how
  // msprobe names the interval columns.
  std::vector<double> bounds = {-1, 0, 1};
  std::vector<std::string> bounds_text = {"-1", "0", "1"};
};

struct CaptureConfig {
  Task task = Task::kStatistics;
  std::string dump_path = "./dump_path";
  std::vector<int64_t> ranks;  // sorted, unique; empty = all. Items: int or "a-b" (or "n") string
  std::vector<int64_t> steps;  // sorted, unique; empty = all. Values are within [0, 1e6]
  Level level = Level::kL1;
  bool async_dump = false;
  bool high_precision = false;           // precision: "low" | "high"
  bool extra_info = true;                // write stack.json / construct.json
  std::vector<std::string> scope;        // 0 or 2 entry names, see EntryFilter
  std::vector<std::string> list;         // see EntryFilter
  std::vector<std::string> tensor_list;  // statistics task: substrings of entry names
  DataMode data_mode;
  SummaryMode summary_mode = SummaryMode::kStatistics;
  std::string file_format = "npy";     // "npy" | "bin"
  int64_t overflow_nums = 1;           // -1 = unlimited; otherwise > 0
  FreeBenchmarkConfig free_benchmark;  // task free_benchmark (scope and list above apply)
  GradProbeOptions grad_probe;         // read only for task grad_probe
};

std::string_view task_name(Task t);                 // "statistics", "tensor", "overflow_check", ...
std::string_view level_name(Level l);               // "L0", "L1", "mix", "L2", "debug"
std::string_view summary_mode_name(SummaryMode m);  // "statistics", "md5"
std::string_view grad_level_name(GradLevel l);      // "L0", "L1", "L2"

// `where` names the origin for the message (a file name, or e.g. "PrecisionDebugger"); the error
// reads `<where>: field "task": ...`. Tasks msprobe knows but capture does not implement
// (grad_probe, run_ut, ...) get their own message.
Task parse_task(std::string_view s, const std::string& where);
Level parse_level(std::string_view s, const std::string& where);

// Malformed JSON: the error carries the 0-based byte offset reported by the parser.
// task_override replaces the file's "task" before its section is chosen (the constructor
// argument of msprobe's PrecisionDebugger).
CaptureConfig parse_capture_config(std::string_view json_text, const std::string& source_name,
                                   std::optional<std::string_view> task_override = std::nullopt);
// Reads `path` (at most 64 MiB); a missing or unreadable file is an InputError naming it.
CaptureConfig load_capture_config(const std::string& path,
                                  std::optional<std::string_view> task_override = std::nullopt);

bool step_selected(const CaptureConfig& cfg, int64_t step);
bool rank_selected(const CaptureConfig& cfg, int64_t rank);
// -1 when steps is empty. msprobe stops capturing for good once the step passes it.
int64_t max_step(const CaptureConfig& cfg);

// Decides, in call order, whether an entry is dumped (list + scope), and answers data_mode and
// tensor_list. Entry names are msprobe's: "Functional.relu.0.forward",
// "Module.layer1.0.conv1.Conv2d.forward.0", "Module.fc.Linear.parameters_grad.0",
// "Aten.add.Tensor.3.forward".
//
// A "call name" item names one call: its full entry name, with either direction
// ("Functional.relu.0.forward" / ".backward"), or without the direction ("Functional.relu.0"); for
// a module, "Module.a.B.forward.N" / "Module.a.B.backward.N", or "Module.a.B" = every call of it.
//
// list (empty = no restriction); an API entry is selected when an item
//   - is a call name of it, or
//   - is a substring of its "{Prefix}.{api}" part ("relu", "conv", "Functional.relu"; never the
//     counter or direction, so "0" or "forward" do not select everything), or
//   - is a call name of a module whose forward encloses the entry (at any depth).
// A module entry is selected when an item is a call name of it or of an enclosing module; a
// selected module "expands": everything run inside its forward is selected. (No substring rule
// for modules: "conv" must not expand every conv module.)
//
// scope [A, B] (empty = no restriction): entries from the first one named by A through the first
// later one named by B, inclusive (A and B are call names). If B is a module, the entries inside
// its forward are included too; the scope closes at the first entry outside it. Once closed it
// stays closed until reset(). With both list and scope, an entry must pass both (as msprobe).
//
// Depth ("inside a module") is derived from enclosing_module: wants_forward() must be called for
// every forward entry, modules included, so that it learns which modules are nested in which.
// Without module entries (level L1) enclosing_module is "" and module items select nothing.
class EntryFilter {
 public:
  explicit EntryFilter(const CaptureConfig& cfg);

  // No list and no scope: every entry is wanted; callers may skip building names.
  bool selects_everything() const { return list_.empty() && scope_.empty(); }

  // Called once per forward entry as it starts, in execution order; enclosing_module is the
  // innermost enclosing module forward entry name, "" if none. Returns whether the call is
  // selected; its backward is selected iff its forward was (callers remember). data_mode is not
  // applied here: see data_mode().
  bool wants_forward(std::string_view entry_name, std::string_view enclosing_module);

  // Name-only list rules (call name / substring), no module nesting; true when list is empty.
  // parameters_grad entries ("Module.a.B.parameters_grad[.k]") match a call name of their module
  // (callers should rather follow the module forward's selection). Names that are neither API nor
  // module entries (debug saves) fall back to msprobe's plain substring match.
  bool list_matches(std::string_view entry_name) const;

  // statistics task: entries whose name contains an item also get their tensors saved (msprobe
  // StatisticsDataProcessor: plain substring of the full name).
  bool tensor_list_matches(std::string_view entry_name) const;

  const DataMode& data_mode() const { return data_mode_; }

  // New step: scope back to before-start, module nesting forgotten.
  void reset();

 private:
  enum class ScopeState { kBefore, kInside, kClosing, kDone };
  bool advance_scope(std::string_view entry, std::string_view enclosing);
  bool list_selected(std::string_view entry, std::string_view enclosing);

  std::vector<std::string> list_, scope_, tensor_list_;
  DataMode data_mode_;
  ScopeState state_ = ScopeState::kBefore;
  std::unordered_set<std::string> closing_modules_;  // B and modules nested in it
  std::unordered_set<std::string> listed_modules_;   // module calls selected by list (expanded)
  std::string last_enclosing_;  // consecutive entries mostly share their enclosing module
  bool last_enclosing_listed_ = false;
};

}  // namespace numprobe::capture
