// msprobe's monitor config.json (shared/reference/msprobe.md §4), read as msprobe users write it.
//
// Invariants:
//  - Every field msprobe documents is either honoured or refused: a field numprobe does not know or
//    does not support (l2_targets, recording_l2_features, sa_order, ...) is a numprobe::Error
//    naming the file and the field. A field of the wrong type or out of range likewise.
//  - Defaults are msprobe's: start_step 0, step_interval 1, collect_times 1e8, eps 1e-8, ndigits 6,
//    step_count_per_record 1, squash_name false (msprobe's code; its doc says true), format csv,
//    ops ["norm"] when none are given.
//  - ops keep the order of the file (the CSV columns follow it); duplicates are dropped.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::monitor {

// What one entry of `targets` asks for: msprobe's struct strings ("tensor", "tuple[2]:0") per
// slot, empty where the slot is not named. An entry with no slot at all monitors every slot.
struct TargetSpec {
  std::string input;
  std::string output;
  std::string input_grad;
  std::string output_grad;
};

struct AlertRule {
  std::string name;  // "AnomalyTurbulence" or "AnomalyNan"
  double threshold = 0;
};

struct CollectiveConfig {
  bool enable = false;
  std::vector<std::string> cc_codeline;
  bool cc_pre_hook = false;
  bool cc_log_only = false;
};

enum class OutputFormat { kCsv, kTensorboard };

struct MonitorConfig {
  std::map<std::string, TargetSpec> targets;  // empty: every module
  bool dynamic_on = false;
  int64_t start_step = 0;
  int64_t step_interval = 1;
  int64_t collect_times = 100000000;
  bool print_struct = false;
  std::vector<int64_t> module_ranks;  // empty: every rank
  bool xy_distribution = false;
  bool all_xy = false;
  bool forward_only = false;
  bool backward_only = false;
  bool wg_distribution = false;
  bool monitor_mbs_grad = false;
  bool mv_distribution = false;
  bool param_distribution = false;
  bool ur_distribution = false;
  bool mg_direction = false;
  CollectiveConfig cc;
  bool stack_info = false;
  std::vector<AlertRule> alert_rules;
  bool alert_dump = false;
  OutputFormat format = OutputFormat::kCsv;
  // Subset of: min, max, norm, mean, zeros (share of |x| < eps), nans (count), infs (numprobe:
  // count of +-Inf).
  std::vector<std::string> ops;
  double eps = 1e-8;
  int ndigits = 6;
  int64_t step_count_per_record = 1;
  bool squash_name = false;
  std::vector<std::string> append_output;

  // Whether `step` is collected: step >= start_step, (step - start_step) % step_interval == 0,
  // and fewer than collect_times steps collected before it.
  bool collects(int64_t step) const;
  // Whether `rank` monitors modules (module_ranks empty or naming it).
  bool monitors_rank(int64_t rank) const;
};

// source names the file in error messages.
MonitorConfig parse_monitor_config(std::string_view json_text, const std::string& source);
MonitorConfig load_monitor_config(const std::string& path);

// The config as canonical JSON (every field, defaults filled): what the Python front reads.
std::string monitor_config_json(const MonitorConfig& config);

}  // namespace numprobe::monitor
