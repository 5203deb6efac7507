// msprobe's monitor config.json (core/monitor/utils.py validate_config, module_hook.py set_config),
// read strictly: msprobe warns and falls back where numprobe refuses (docs/monitor.md, "Config").
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/json_tree.h"
#include "base/json_writer.h"
#include "numprobe/error.h"
#include "numprobe/monitor/config.h"

namespace numprobe::monitor {
namespace {

using base::Json;
using Fields = std::vector<std::pair<std::string, Json>>;

const char* const kOps[] = {"min", "max", "norm", "mean", "zeros", "nans", "infs"};
const char* const kRules[] = {"AnomalyTurbulence", "AnomalyNan"};

class Parser {
 public:
  explicit Parser(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(source_, "field '" + field + "' " + what);
  }

  bool boolean(const Json& v, const std::string& field) const {
    if (!v.is_bool()) fail(field, "must be true or false");
    return v.boolean;
  }

  int64_t integer(const Json& v, const std::string& field, int64_t lo, int64_t hi) const {
    if (!v.is_int()) fail(field, "must be an integer");
    const int64_t x = v.integer;  // beyond int64 (!fits_int64): out of any range
    if (!v.fits_int64 || x < lo || x > hi)
      fail(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return x;
  }

  double number(const Json& v, const std::string& field, double lo) const {
    if (!v.is_number()) fail(field, "must be a number");
    const double x = v.number;
    if (!std::isfinite(x) || x < lo)
      fail(field, "must be a finite number >= " + std::to_string(lo));
    return x;
  }

  std::string string(const Json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "must be a string");
    return v.text;
  }

  const Fields& object(const Json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "must be an object");
    return v.fields;
  }

  const std::vector<Json>& array(const Json& v, const std::string& field) const {
    if (!v.is_array()) fail(field, "must be a list");
    return v.items;
  }

  [[noreturn]] void unsupported(const std::string& field) const {
    throw InputError(source_, "field '" + field + "' is not supported by numprobe");
  }

  void targets(const Json& v, MonitorConfig& c) const {
    // msprobe (validate_targets): an object of module or parameter names, each an object naming
    // the slots to watch with msprobe's struct strings ({} watches every slot).
    for (const auto& [module, spec] : object(v, "targets")) {
      const std::string field = "targets." + module;
      TargetSpec t;
      for (const auto& [slot, s] : object(spec, field)) {
        const std::string sf = field + "." + slot;
        if (slot == "input")
          t.input = string(s, sf);
        else if (slot == "output")
          t.output = string(s, sf);
        else if (slot == "input_grad")
          t.input_grad = string(s, sf);
        else if (slot == "output_grad")
          t.output_grad = string(s, sf);
        else
          unsupported(sf);
      }
      c.targets[module] = t;
    }
  }

  void cc(const Json& v, CollectiveConfig& cc) const {
    for (const auto& [k, x] : object(v, "cc_distribution")) {
      const std::string field = "cc_distribution." + k;
      if (k == "enable")
        cc.enable = boolean(x, field);
      else if (k == "cc_pre_hook")
        cc.cc_pre_hook = boolean(x, field);
      else if (k == "cc_log_only")
        cc.cc_log_only = boolean(x, field);
      else if (k == "cc_codeline") {
        for (const auto& line : array(x, field)) cc.cc_codeline.push_back(string(line, field));
      } else {
        unsupported(field);
      }
    }
  }

  void alert(const Json& v, MonitorConfig& c) const {
    for (const auto& [k, x] : object(v, "alert")) {
      if (k == "dump") {
        c.alert_dump = boolean(x, "alert.dump");
      } else if (k == "rules") {
        size_t i = 0;
        for (const auto& r : array(x, "alert.rules"))
          rule(r, "alert.rules[" + std::to_string(i++) + "]", c);
      } else {
        unsupported("alert." + k);
      }
    }
  }

  void rule(const Json& r, const std::string& field, MonitorConfig& c) const {
    AlertRule rule;
    // AnomalyNan without a threshold checks NaN only (msprobe's threshold=None): +inf never trips.
    rule.threshold = std::numeric_limits<double>::infinity();
    bool has_threshold = false;
    for (const auto& [k, x] : object(r, field)) {
      if (k == "rule_name") {
        rule.name = string(x, field + ".rule_name");
        if (std::find(std::begin(kRules), std::end(kRules), rule.name) == std::end(kRules))
          fail(field + ".rule_name",
               "names an unknown rule '" + rule.name + "' (AnomalyTurbulence, AnomalyNan)");
      } else if (k == "args") {
        for (const auto& [a, y] : object(x, field + ".args")) {
          if (a != "threshold") unsupported(field + ".args." + a);
          rule.threshold = number(y, field + ".args.threshold", 0);
          has_threshold = true;
        }
      } else {
        unsupported(field + "." + k);
      }
    }
    if (rule.name.empty()) fail(field + ".rule_name", "is missing");
    if (rule.name == "AnomalyTurbulence" && !has_threshold)
      fail(field + ".args.threshold", "is required by AnomalyTurbulence");
    c.alert_rules.push_back(rule);
  }

  void ops(const Json& v, MonitorConfig& c) const {
    for (const auto& op : array(v, "ops")) {
      const std::string name = string(op, "ops");
      if (std::find(std::begin(kOps), std::end(kOps), name) == std::end(kOps))
        fail("ops", "names an unknown op '" + name + "' (min, max, norm, mean, zeros, nans, infs)");
      if (std::find(c.ops.begin(), c.ops.end(), name) == c.ops.end()) c.ops.push_back(name);
    }
  }

  void append_output(const Json& v, MonitorConfig& c) const {
    for (const auto& t : array(v, "append_output"))
      c.append_output.push_back(string(t, "append_output"));
    if (!c.append_output.empty() && c.append_output.size() != 2)
      fail("append_output", "must be empty or hold two time tags [start, end]");
  }

  void field(const std::string& k, const Json& x, MonitorConfig& c) const {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if (k == "targets")
      targets(x, c);
    else if (k == "dynamic_on")
      c.dynamic_on = boolean(x, k);
    else if (k == "start_step")
      c.start_step = integer(x, k, 0, kMax);
    else if (k == "step_interval")
      c.step_interval = integer(x, k, 1, kMax);
    else if (k == "collect_times")
      c.collect_times = integer(x, k, 0, kMax);
    else if (k == "print_struct")
      c.print_struct = boolean(x, k);
    else if (k == "module_ranks") {
      for (const auto& r : array(x, k)) c.module_ranks.push_back(integer(r, k, 0, kMax));
    } else if (k == "xy_distribution")
      c.xy_distribution = boolean(x, k);
    else if (k == "all_xy")
      c.all_xy = boolean(x, k);
    else if (k == "forward_only")
      c.forward_only = boolean(x, k);
    else if (k == "backward_only")
      c.backward_only = boolean(x, k);
    else if (k == "wg_distribution")
      c.wg_distribution = boolean(x, k);
    else if (k == "monitor_mbs_grad")
      c.monitor_mbs_grad = boolean(x, k);
    else if (k == "mv_distribution")
      c.mv_distribution = boolean(x, k);
    else if (k == "param_distribution")
      c.param_distribution = boolean(x, k);
    else if (k == "ur_distribution")
      c.ur_distribution = boolean(x, k);
    else if (k == "mg_direction")
      c.mg_direction = boolean(x, k);
    else if (k == "cc_distribution")
      cc(x, c.cc);
    else if (k == "stack_info")
      c.stack_info = boolean(x, k);
    else if (k == "alert")
      alert(x, c);
    else if (k == "format") {
      const std::string f = string(x, k);
      if (f == "csv")
        c.format = OutputFormat::kCsv;
      else if (f == "tensorboard")
        c.format = OutputFormat::kTensorboard;
      else
        fail(k, "'" + f + "' is not supported by numprobe (csv, tensorboard)");
    } else if (k == "ops")
      ops(x, c);
    else if (k == "eps")
      c.eps = number(x, k, 0);
    else if (k == "ndigits")
      c.ndigits = static_cast<int>(integer(x, k, 0, 20));
    else if (k == "step_count_per_record")
      c.step_count_per_record = integer(x, k, 1, 1000000);
    else if (k == "squash_name")
      c.squash_name = boolean(x, k);
    else if (k == "append_output")
      append_output(x, c);
    else
      unsupported(k);  // l2_targets, recording_l2_features, sa_order and anything unknown
  }

 private:
  const std::string& source_;
};

}  // namespace

bool MonitorConfig::collects(int64_t step) const {
  if (step < start_step || step_interval <= 0) return false;
  const int64_t since = step - start_step;
  return since % step_interval == 0 && since / step_interval < collect_times;
}

bool MonitorConfig::monitors_rank(int64_t rank) const {
  return module_ranks.empty() ||
         std::find(module_ranks.begin(), module_ranks.end(), rank) != module_ranks.end();
}

MonitorConfig parse_monitor_config(std::string_view json_text, const std::string& source) {
  // Strict JSON; a key given twice keeps its last value (as Python's json and msprobe do).
  base::JsonReadOptions options;
  options.strict = true;
  options.syntax_label = "not valid JSON";
  const Json doc = base::parse_json(json_text, source, options);
  if (!doc.is_object()) throw InputError(source, "the monitor config must be a JSON object");
  const Parser p(source);
  MonitorConfig c;
  for (const auto& [k, x] : doc.fields) p.field(k, x, c);
  if (c.ops.empty()) c.ops.push_back("norm");
  return c;
}

MonitorConfig load_monitor_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open the monitor config");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_monitor_config(text.str(), path);
}

// Keys in this order, compact (base/json_writer.h): the layout trainer_mon.py has always read.
std::string monitor_config_json(const MonitorConfig& c) {
  std::string out;
  base::JsonWriter w(out);
  w.begin_object();
  w.key("targets");
  w.begin_object();
  for (const auto& [name, t] : c.targets) {  // std::map: sorted by name
    w.key(name);
    w.begin_object();
    const std::pair<const char*, const std::string*> slots[] = {{"input", &t.input},
                                                                {"output", &t.output},
                                                                {"input_grad", &t.input_grad},
                                                                {"output_grad", &t.output_grad}};
    for (const auto& [slot, spec] : slots) {
      if (spec->empty()) continue;
      w.key(slot);
      w.string_value(*spec);
    }
    w.end_object();
  }
  w.end_object();
  auto flag = [&](const char* key, bool v) {
    w.key(key);
    w.bool_value(v);
  };
  auto integer = [&](const char* key, int64_t v) {
    w.key(key);
    w.int_value(v);
  };
  flag("dynamic_on", c.dynamic_on);
  integer("start_step", c.start_step);
  integer("step_interval", c.step_interval);
  integer("collect_times", c.collect_times);
  flag("print_struct", c.print_struct);
  w.key("module_ranks");
  w.int_array(c.module_ranks);
  flag("xy_distribution", c.xy_distribution);
  flag("all_xy", c.all_xy);
  flag("forward_only", c.forward_only);
  flag("backward_only", c.backward_only);
  flag("wg_distribution", c.wg_distribution);
  flag("monitor_mbs_grad", c.monitor_mbs_grad);
  flag("mv_distribution", c.mv_distribution);
  flag("param_distribution", c.param_distribution);
  flag("ur_distribution", c.ur_distribution);
  flag("mg_direction", c.mg_direction);
  w.key("cc_distribution");
  w.begin_object();
  flag("enable", c.cc.enable);
  w.key("cc_codeline");
  w.string_array(c.cc.cc_codeline);
  flag("cc_pre_hook", c.cc.cc_pre_hook);
  flag("cc_log_only", c.cc.cc_log_only);
  w.end_object();
  flag("stack_info", c.stack_info);
  w.key("alert");
  w.begin_object();
  w.key("rules");
  w.begin_array();
  for (const auto& r : c.alert_rules) {
    w.begin_object();
    w.key("rule_name");
    w.string_value(r.name);
    w.key("args");
    w.begin_object();
    if (std::isfinite(r.threshold)) {  // none: NaN check only
      w.key("threshold");
      w.float_value(r.threshold);
    }
    w.end_object();
    w.end_object();
  }
  w.end_array();
  flag("dump", c.alert_dump);
  w.end_object();
  w.key("format");
  w.string_value(c.format == OutputFormat::kCsv ? "csv" : "tensorboard");
  w.key("ops");
  w.string_array(c.ops);
  w.key("eps");
  w.float_value(c.eps);
  integer("ndigits", c.ndigits);
  integer("step_count_per_record", c.step_count_per_record);
  flag("squash_name", c.squash_name);
  w.key("append_output");
  w.string_array(c.append_output);
  w.end_object();
  return out;
}

}  // namespace numprobe::monitor
