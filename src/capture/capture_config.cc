#include "capture/capture_config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <utility>

#include "base/json_text.h"
#include "base/json_tree.h"
#include "base/json_writer.h"
#include "numprobe/error.h"

namespace numprobe::capture {
namespace {

using base::Json;
using Fields = std::vector<std::pair<std::string, Json>>;

// msprobe Const.STEP_RANK_MAXIMUM_VALUE: bounds each value, hence the size of an expanded range.
constexpr int64_t kMaxStepOrRank = 1000000;
constexpr std::streamoff kMaxConfigBytes = 64ll << 20;

const char* const kTaskNames[] = {"statistics", "tensor",         "overflow_check",
                                  "structure",  "free_benchmark", "grad_probe"};
// msprobe tasks (mstt Const.TASK_LIST and the successor's) that are not capture tasks.
const char* const kOtherTasks[] = {"run_ut", "acc_check", "exception_dump", "nan_check",
                                   "diff_check"};

// A user string for a message: JSON-quoted (control bytes escaped), truncated.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 80;
  bool cut = s.size() > kMax;
  std::string q;
  base::append_json_string(q, s.substr(0, kMax));
  if (cut) q.insert(q.size() - 1, "...");
  return q;
}

// The kind of a value, and the value itself where it is short: `string "x"`, `number 1.5`,
// `boolean true`, `null`, `array`, `object` (a number as written in the file).
std::string describe(const Json& v) {
  std::string d = v.type_name();
  if (v.is_string()) return d + " " + quote(v.text);
  if (v.is_number()) return d + " " + v.text;
  if (v.is_bool()) return d + (v.boolean ? " true" : " false");
  return d;
}

std::string one_of(std::initializer_list<const char*> names) {
  std::string s;
  for (const char* n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

class Parser {
 public:
  explicit Parser(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(source_, "field \"" + field + "\": " + what);
  }
  [[noreturn]] void wrong_type(const std::string& field, const char* expected,
                               const Json& v) const {
    fail(field, std::string("expected ") + expected + ", got " + describe(v));
  }

  // The typed reads: each returns the value or throws naming the field and what it holds.
  bool boolean(const std::string& field, const Json& v) const {
    if (!v.is_bool()) wrong_type(field, "a boolean", v);
    return v.boolean;
  }
  const std::string& string(const std::string& field, const Json& v) const {
    if (!v.is_string()) wrong_type(field, "a string", v);
    return v.text;
  }
  int64_t integer(const std::string& field, const Json& v) const {
    if (!v.is_int()) wrong_type(field, "an integer", v);
    if (!v.fits_int64) fail(field, v.text + " is out of range");
    return v.integer;
  }
  const std::vector<Json>& array(const std::string& field, const Json& v) const {
    if (!v.is_array()) wrong_type(field, "a list", v);
    return v.items;
  }
  const Fields& object(const std::string& field, const Json& v) const {
    if (!v.is_object()) wrong_type(field, "an object", v);
    return v.fields;
  }
  std::string choice(const std::string& field, const Json& v,
                     std::initializer_list<const char*> allowed) const {
    const std::string& s = string(field, v);
    for (const char* a : allowed) {
      if (s == a) return s;
    }
    fail(field, quote(s) + " is not one of " + one_of(allowed));
  }
  // list[str] of non-empty strings (an empty item would match every entry name).
  std::vector<std::string> string_list(const std::string& field, const Json& v) const {
    std::vector<std::string> out;
    const auto& arr = array(field, v);
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string item_field = field + "[" + std::to_string(i) + "]";
      const std::string& s = string(item_field, arr[i]);
      if (s.empty()) fail(item_field, "empty string");
      out.push_back(s);
    }
    return out;
  }

  int64_t bounded(const std::string& field, int64_t v) const {
    if (v < 0 || v > kMaxStepOrRank) {
      fail(field, std::to_string(v) + " is outside [0, " + std::to_string(kMaxStepOrRank) + "]");
    }
    return v;
  }
  int64_t decimal(const std::string& field, std::string_view s, std::string_view whole) const {
    int64_t v = -1;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    bool digits_only =
        !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits_only || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
      fail(field, quote(whole) + " is not a non-negative integer or an \"a-b\" range");
    }
    return bounded(field, v);
  }

  // msprobe get_real_step_or_rank: ints and "a-b" strings (a <= b), expanded, sorted, unique.
  // Ranges are merged before expanding, so repeated wide ranges cost no more than one.
  std::vector<int64_t> step_or_rank(const std::string& field, const Json& v) const {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    const auto& arr = array(field, v);
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string item_field = field + "[" + std::to_string(i) + "]";
      const Json& item = arr[i];
      if (item.is_string()) {
        const std::string& s = item.text;
        size_t dash = s.find('-');
        if (dash == std::string::npos) {
          int64_t x = decimal(item_field, s, s);
          ranges.emplace_back(x, x);
          continue;
        }
        std::string_view sv(s);
        int64_t lo = decimal(item_field, sv.substr(0, dash), s);
        int64_t hi = decimal(item_field, sv.substr(dash + 1), s);
        if (lo > hi) {
          fail(item_field, "range " + quote(s) + " has its left bound greater than its right");
        }
        ranges.emplace_back(lo, hi);
      } else if (item.is_int()) {
        int64_t x = bounded(item_field, integer(item_field, item));
        ranges.emplace_back(x, x);
      } else {
        wrong_type(item_field, "an integer or an \"a-b\" string", item);
      }
    }
    std::sort(ranges.begin(), ranges.end());
    std::vector<int64_t> out;
    int64_t next = 0;  // smallest value not yet emitted
    for (const auto& [lo, hi] : ranges) {
      for (int64_t x = std::max(lo, next); x <= hi; ++x) out.push_back(x);
      next = std::max(next, hi + 1);
    }
    return out;
  }

  DataMode data_mode(const std::string& field, const Json& v) const {
    const auto& arr = array(field, v);
    // msprobe: len(data_mode) >= len(DUMP_DATA_MODE_LIST) (5) is an error.
    if (arr.size() > 4) fail(field, "has " + std::to_string(arr.size()) + " items, at most 4");
    bool all = false, fwd = false, bwd = false, in = false, out = false;
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string m = choice(field + "[" + std::to_string(i) + "]", arr[i],
                             {"all", "forward", "backward", "input", "output"});
      all |= m == "all";
      fwd |= m == "forward";
      bwd |= m == "backward";
      in |= m == "input";
      out |= m == "output";
    }
    if (all && arr.size() != 1) fail(field, "\"all\" cannot be combined with other modes");
    DataMode dm;
    if (all) return dm;
    if (fwd || bwd) {
      dm.forward = fwd;
      dm.backward = bwd;
    }
    if (in || out) {
      dm.input = in;
      dm.output = out;
    }
    return dm;
  }

  const std::string& source() const { return source_; }

 private:
  const std::string& source_;
};

bool is_one_of(std::string_view s, const char* const* begin, const char* const* end) {
  return std::find_if(begin, end, [&](const char* n) { return s == n; }) != end;
}

// Strict JSON, as a config file must be, with duplicate keys refused (Python's json silently
// keeps the last one; a duplicated field in a config is almost always a mistake that changes what
// is dumped).
Json parse_json(std::string_view text, const std::string& source) {
  base::JsonReadOptions options;
  options.strict = true;
  options.unique_keys = true;
  options.syntax_label = "malformed JSON";
  return base::parse_json(text, source, options);
}

// The free_benchmark section's own fields; false for scope/list and unknown keys (the common
// code takes those).
bool parse_free_benchmark_field(const Parser& p, const std::string& key, const std::string& f,
                                const Json& v, CaptureConfig& cfg) {
  FreeBenchmarkConfig& fb = cfg.free_benchmark;
  if (key == "pert_mode") {
    fb.pert_mode = p.choice(f, v, kPertModes);
  } else if (key == "handler_type") {
    fb.handler_type = p.choice(f, v, kHandlerTypes);
  } else if (key == "fuzz_stage") {
    fb.fuzz_stage = p.choice(f, v, kFuzzStages);
  } else if (key == "fuzz_device") {
    fb.fuzz_device = p.choice(f, v, kFuzzDevices);
  } else if (key == "fuzz_level") {
    fb.fuzz_level = p.choice(f, v, kFuzzLevels);
  } else if (key == "if_preheat") {
    fb.if_preheat = p.boolean(f, v);
  } else if (key == "preheat_step" || key == "max_sample") {
    int64_t n = p.integer(f, v);
    if (n <= 0) p.fail(f, std::to_string(n) + " must be > 0");
    (key == "preheat_step" ? fb.preheat_step : fb.max_sample) = n;
  } else {
    return false;
  }
  return true;
}

// msprobe GradToolConfig: grad_level, param_list, bounds (check_bounds: numbers, strictly
// ascending, within int64's range). An empty bounds list is refused: msprobe would then write one
// more value per line than its header has columns.
void parse_grad_probe_section(const Parser& p, const std::string& section, const Json& obj,
                              GradProbeOptions& g) {
  for (const auto& [key, v] : p.object(section, obj)) {
    std::string f = section + "." + key;
    if (key == "grad_level") {
      std::string l = p.choice(f, v, {"L0", "L1", "L2"});
      g.level = l == "L0" ? GradLevel::kL0 : l == "L1" ? GradLevel::kL1 : GradLevel::kL2;
    } else if (key == "param_list") {
      g.param_list = p.string_list(f, v);
    } else if (key == "bounds") {
      const auto& arr = p.array(f, v);
      if (arr.empty()) p.fail(f, "empty list: at least one bound is needed");
      g.bounds.clear();
      g.bounds_text.clear();
      for (size_t i = 0; i < arr.size(); ++i) {
        std::string item = f + "[" + std::to_string(i) + "]";
        const Json& b = arr[i];
        double x = 0;
        std::string text;
        if (b.is_int()) {
          x = static_cast<double>(p.integer(item, b));
          text = b.text;
        } else if (b.is_number()) {
          x = b.number;
          // msprobe compares with -2**63 and 2**63 - 1 (Python: exactly).
          if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
            p.fail(item, b.text + " is outside int64's range");
          base::append_py_float(text, x);
        } else {
          p.wrong_type(item, "a number", b);
        }
        if (!g.bounds.empty() && !(x > g.bounds.back()))
          p.fail(f, "must be strictly ascending: " + text + " follows " + g.bounds_text.back());
        g.bounds.push_back(x);
        g.bounds_text.push_back(text);
      }
    } else {
      p.fail(f, "unknown field in the grad_probe section (known: grad_level, param_list, bounds)");
    }
  }
}

void parse_task_section(const Parser& p, const std::string& section, const Json& obj,
                        CaptureConfig& cfg) {
  if (cfg.task == Task::kGradProbe) {
    parse_grad_probe_section(p, section, obj, cfg.grad_probe);
    return;
  }
  for (const auto& [key, v] : p.object(section, obj)) {
    std::string f = section + "." + key;
    if (cfg.task == Task::kOverflowCheck) {
      if (key == "overflow_nums") {
        int64_t n = p.integer(f, v);
        if (n == 0 || n < -1) p.fail(f, std::to_string(n) + " must be -1 (unlimited) or > 0");
        cfg.overflow_nums = n;
      } else if (key == "check_mode") {
        p.choice(f, v, {"all", "aicore", "atomic"});
      } else {
        p.fail(f,
               "unknown field in the overflow_check section (known: overflow_nums, "
               "check_mode)");
      }
      continue;
    }
    const bool dump_task = cfg.task == Task::kStatistics || cfg.task == Task::kTensor;
    if (cfg.task == Task::kFreeBenchmark && parse_free_benchmark_field(p, key, f, v, cfg)) {
      continue;
    }
    if (key == "scope") {
      cfg.scope = p.string_list(f, v);
      if (cfg.scope.size() != 0 && cfg.scope.size() != 2) {
        p.fail(f, "must hold exactly 2 entry names [start, end] (or be empty), got " +
                      std::to_string(cfg.scope.size()));
      }
    } else if (key == "list") {
      cfg.list = p.string_list(f, v);
      for (size_t i = 0; i < cfg.list.size(); ++i) {
        if (cfg.list[i].rfind("name-regex(", 0) == 0) {
          p.fail(f + "[" + std::to_string(i) + "]",
                 "name-regex(...) items are only supported by MindSpore graph mode");
        }
      }
    } else if (key == "data_mode" && cfg.task != Task::kStructure) {
      cfg.data_mode = p.data_mode(f, v);
    } else if (key == "tensor_list" && cfg.task == Task::kStatistics) {
      cfg.tensor_list = p.string_list(f, v);
    } else if (key == "summary_mode" && dump_task) {
      std::string m = p.choice(f, v, {"statistics", "md5"});
      cfg.summary_mode = m == "md5" ? SummaryMode::kMd5 : SummaryMode::kStatistics;
    } else if (key == "file_format" && dump_task) {
      cfg.file_format = p.choice(f, v, {"npy", "bin"});
    } else if (key == "device" && dump_task) {
      p.choice(f, v, {"device", "host"});
    } else if (key == "bench_path" && dump_task) {
      p.string(f, v);
    } else if (key == "diff_nums" && dump_task) {
      int64_t n = p.integer(f, v);
      if (n == 0 || n < -1) p.fail(f, std::to_string(n) + " must be -1 (unlimited) or > 0");
    } else if (key == "slice" && dump_task) {
      p.array(f, v);
    } else {
      p.fail(f, "unknown field in the " + section + " section");
    }
  }
}

}  // namespace

std::string_view task_name(Task t) {
  switch (t) {
    case Task::kStatistics:
      return "statistics";
    case Task::kTensor:
      return "tensor";
    case Task::kOverflowCheck:
      return "overflow_check";
    case Task::kStructure:
      return "structure";
    case Task::kFreeBenchmark:
      return "free_benchmark";
    case Task::kGradProbe:
      return "grad_probe";
  }
  return "statistics";
}

std::string_view grad_level_name(GradLevel l) {
  return l == GradLevel::kL0 ? "L0" : l == GradLevel::kL1 ? "L1" : "L2";
}

std::string_view level_name(Level l) {
  switch (l) {
    case Level::kL0:
      return "L0";
    case Level::kL1:
      return "L1";
    case Level::kMix:
      return "mix";
    case Level::kL2:
      return "L2";
    case Level::kDebug:
      return "debug";
  }
  return "L1";
}

std::string_view summary_mode_name(SummaryMode m) {
  return m == SummaryMode::kMd5 ? "md5" : "statistics";
}

Task parse_task(std::string_view s, const std::string& where) {
  static constexpr Task kTasks[] = {Task::kStatistics, Task::kTensor,        Task::kOverflowCheck,
                                    Task::kStructure,  Task::kFreeBenchmark, Task::kGradProbe};
  for (size_t i = 0; i < std::size(kTaskNames); ++i) {
    if (s == kTaskNames[i]) return kTasks[i];
  }
  const std::string supported =
      "statistics, tensor, overflow_check, structure, free_benchmark, grad_probe";
  if (is_one_of(s, std::begin(kOtherTasks), std::end(kOtherTasks))) {
    throw InputError(where,
                     "field \"task\": task " + quote(s) +
                         " is not a capture task numprobe supports (supported: " + supported + ")");
  }
  throw InputError(where, "field \"task\": " + quote(s) + " is not one of " + supported);
}

Level parse_level(std::string_view s, const std::string& where) {
  if (s == "L0") return Level::kL0;
  if (s == "L1") return Level::kL1;
  if (s == "mix") return Level::kMix;
  if (s == "L2") return Level::kL2;
  if (s == "debug") return Level::kDebug;
  throw InputError(where, "field \"level\": " + quote(s) + " is not one of L0, L1, L2, mix, debug");
}

CaptureConfig parse_capture_config(std::string_view json_text, const std::string& source_name,
                                   std::optional<std::string_view> task_override) {
  const Json root = parse_json(json_text, source_name);
  Parser p(source_name);
  if (!root.is_object()) {
    throw InputError(source_name, "expected a JSON object at the top level, got " +
                                      std::string(root.type_name()));
  }
  CaptureConfig cfg;
  // The task decides which section is read, so it goes first.
  if (const Json* task = root.find("task"))
    cfg.task = parse_task(p.string("task", *task), source_name);
  if (task_override) cfg.task = parse_task(*task_override, source_name);
  // One branch per field: the field's name and the typed read that fills CaptureConfig.
  for (const auto& [key, v] : root.fields) {
    if (key == "task") continue;
    if (key == "dump_path") {
      cfg.dump_path = p.string(key, v);
      if (cfg.dump_path.empty()) p.fail(key, "empty path");
    } else if (key == "rank") {
      cfg.ranks = p.step_or_rank(key, v);
    } else if (key == "step") {
      cfg.steps = p.step_or_rank(key, v);
    } else if (key == "level") {
      cfg.level = parse_level(p.string(key, v), source_name);
    } else if (key == "async_dump") {
      cfg.async_dump = p.boolean(key, v);
    } else if (key == "precision") {
      cfg.high_precision = p.choice(key, v, {"low", "high"}) == "high";
    } else if (key == "extra_info") {
      cfg.extra_info = p.boolean(key, v);
    } else if (key == "enable_dataloader" || key == "dump_enable") {
      p.boolean(key, v);
    } else if (key == "risk_level") {
      p.choice(key, v, {"ALL", "CORE", "FOCUS"});
    } else if (key == task_name(cfg.task)) {
      parse_task_section(p, key, v, cfg);
    } else if (is_one_of(key, std::begin(kTaskNames), std::end(kTaskNames)) ||
               is_one_of(key, std::begin(kOtherTasks), std::end(kOtherTasks))) {
      continue;  // another task's section
    } else {
      p.fail(key, "unknown field");
    }
  }
  if (cfg.task == Task::kFreeBenchmark) {
    check_free_benchmark(cfg.free_benchmark, cfg.list.empty(), cfg.level == Level::kL1,
                         source_name);
  }
  return cfg;
}

CaptureConfig load_capture_config(const std::string& path,
                                  std::optional<std::string_view> task_override) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  std::streamoff size = in.tellg();
  if (size < 0) throw InputError(path, "cannot read");
  if (size > kMaxConfigBytes) {
    throw InputError(path, "is " + std::to_string(size) + " bytes; a config.json is at most " +
                               std::to_string(kMaxConfigBytes));
  }
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(text.data(), size)) throw InputError(path, "cannot read");
  return parse_capture_config(text, path, task_override);
}

bool step_selected(const CaptureConfig& cfg, int64_t step) {
  return cfg.steps.empty() || std::binary_search(cfg.steps.begin(), cfg.steps.end(), step);
}

bool rank_selected(const CaptureConfig& cfg, int64_t rank) {
  return cfg.ranks.empty() || std::binary_search(cfg.ranks.begin(), cfg.ranks.end(), rank);
}

int64_t max_step(const CaptureConfig& cfg) {
  return cfg.steps.empty() ? -1 : cfg.steps.back();
}

}  // namespace numprobe::capture
