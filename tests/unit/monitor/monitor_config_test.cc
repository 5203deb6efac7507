#include <gtest/gtest.h>

#include <cmath>

#include "numprobe/error.h"
#include "numprobe/monitor/config.h"

namespace numprobe::monitor {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_monitor_config(json, "cfg.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MonitorConfig, DefaultsAreMsprobes) {
  const MonitorConfig c = parse_monitor_config("{}", "cfg.json");
  EXPECT_TRUE(c.targets.empty());
  EXPECT_EQ(c.start_step, 0);
  EXPECT_EQ(c.step_interval, 1);
  EXPECT_EQ(c.collect_times, 100000000);
  EXPECT_DOUBLE_EQ(c.eps, 1e-8);
  EXPECT_EQ(c.ndigits, 6);
  EXPECT_EQ(c.step_count_per_record, 1);
  EXPECT_FALSE(c.squash_name);  // msprobe's code: config.get('squash_name', False)
  EXPECT_EQ(c.format, OutputFormat::kCsv);
  EXPECT_EQ(c.ops, std::vector<std::string>{"norm"});
  EXPECT_TRUE(c.alert_rules.empty());
}

TEST(MonitorConfig, EveryField) {
  const MonitorConfig c = parse_monitor_config(R"({
    "targets": {"fc1": {"input": "tuple[2]:0", "output": "tensor", "input_grad": "tuple[1]:0",
                        "output_grad": "tensor"}, "fc2.weight": {}},
    "dynamic_on": true, "start_step": 3, "step_interval": 2, "collect_times": 5,
    "print_struct": true, "module_ranks": [0, 2], "xy_distribution": true, "all_xy": true,
    "forward_only": true, "backward_only": false, "wg_distribution": true,
    "monitor_mbs_grad": true, "mv_distribution": true, "param_distribution": true,
    "ur_distribution": true, "mg_direction": true,
    "cc_distribution": {"enable": true, "cc_codeline": ["a.py:1"], "cc_pre_hook": true,
                        "cc_log_only": true},
    "stack_info": true,
    "alert": {"rules": [{"rule_name": "AnomalyTurbulence", "args": {"threshold": 0.5}},
                        {"rule_name": "AnomalyNan"}], "dump": true},
    "format": "tensorboard", "ops": ["max", "norm", "max", "infs"], "eps": 1e-6, "ndigits": 3,
    "step_count_per_record": 10, "squash_name": true,
    "append_output": ["Dec03_21-34-40", "Dec03_22-00-00"]})",
                                               "cfg.json");
  EXPECT_EQ(c.targets.at("fc1").input, "tuple[2]:0");
  EXPECT_EQ(c.targets.at("fc1").output_grad, "tensor");
  EXPECT_TRUE(c.targets.at("fc2.weight").input.empty());
  EXPECT_TRUE(c.dynamic_on && c.print_struct && c.xy_distribution && c.all_xy && c.forward_only);
  EXPECT_FALSE(c.backward_only);
  EXPECT_TRUE(c.wg_distribution && c.monitor_mbs_grad && c.mv_distribution &&
              c.param_distribution && c.ur_distribution && c.mg_direction && c.stack_info);
  EXPECT_EQ(c.start_step, 3);
  EXPECT_EQ(c.step_interval, 2);
  EXPECT_EQ(c.collect_times, 5);
  EXPECT_EQ(c.module_ranks, (std::vector<int64_t>{0, 2}));
  EXPECT_TRUE(c.cc.enable && c.cc.cc_pre_hook && c.cc.cc_log_only);
  EXPECT_EQ(c.cc.cc_codeline, std::vector<std::string>{"a.py:1"});
  ASSERT_EQ(c.alert_rules.size(), 2u);
  EXPECT_EQ(c.alert_rules[0].name, "AnomalyTurbulence");
  EXPECT_DOUBLE_EQ(c.alert_rules[0].threshold, 0.5);
  EXPECT_TRUE(std::isinf(c.alert_rules[1].threshold));  // NaN check only
  EXPECT_TRUE(c.alert_dump);
  EXPECT_EQ(c.format, OutputFormat::kTensorboard);
  EXPECT_EQ(c.ops, (std::vector<std::string>{"max", "norm", "infs"}));  // order kept, dup dropped
  EXPECT_DOUBLE_EQ(c.eps, 1e-6);
  EXPECT_EQ(c.ndigits, 3);
  EXPECT_EQ(c.step_count_per_record, 10);
  EXPECT_TRUE(c.squash_name);
  EXPECT_EQ(c.append_output.size(), 2u);

  // The canonical JSON reads back to the same config.
  const MonitorConfig back = parse_monitor_config(monitor_config_json(c), "canon.json");
  EXPECT_EQ(monitor_config_json(back), monitor_config_json(c));
  EXPECT_EQ(back.ops, c.ops);
  EXPECT_EQ(back.targets.at("fc1").input_grad, "tuple[1]:0");
}

// The canonical JSON's bytes as nlohmann/json wrote them before base::JsonWriter did (the Python
// front reads them): key order, compact layout, 2.0 and 0.001, UTF-8 kept, \u0001 escaped.
TEST(MonitorConfig, CanonicalJsonLayout) {
  const MonitorConfig c = parse_monitor_config(
      R"({"eps": 0.001, "start_step": 9223372036854775807, "targets": {"\u4e2d\u0001": {},
          "fc1": {"output_grad": "t", "input": "tensor"}},
          "alert": {"rules": [{"rule_name": "AnomalyTurbulence", "args": {"threshold": 2}},
                              {"rule_name": "AnomalyNan"}]},
          "module_ranks": [0, 3], "ops": ["norm"], "ops": ["max", "min"]})",
      "c.json");
  EXPECT_EQ(monitor_config_json(c),
            R"({"targets":{"fc1":{"input":"tensor","output_grad":"t"},")"
            "\xe4\xb8\xad"
            R"(\u0001":{}},"dynamic_on":false,)"
            R"("start_step":9223372036854775807,"step_interval":1,"collect_times":100000000,)"
            R"("print_struct":false,"module_ranks":[0,3],"xy_distribution":false,"all_xy":false,)"
            R"("forward_only":false,"backward_only":false,"wg_distribution":false,)"
            R"("monitor_mbs_grad":false,"mv_distribution":false,"param_distribution":false,)"
            R"("ur_distribution":false,"mg_direction":false,"cc_distribution":{"enable":false,)"
            R"("cc_codeline":[],"cc_pre_hook":false,"cc_log_only":false},"stack_info":false,)"
            R"("alert":{"rules":[{"rule_name":"AnomalyTurbulence","args":{"threshold":2.0}},)"
            R"({"rule_name":"AnomalyNan","args":{}}],"dump":false},"format":"csv",)"
            R"("ops":["max","min"],"eps":0.001,"ndigits":6,"step_count_per_record":1,)"
            R"("squash_name":false,"append_output":[]})");
}

TEST(MonitorConfig, EveryErrorNamesFileAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"l2_targets": {}})", "cfg.json: field 'l2_targets' is not supported by numprobe"},
      {R"({"recording_l2_features": true})", "field 'recording_l2_features' is not supported"},
      {R"({"sa_order": "s,b,h,d"})", "field 'sa_order' is not supported"},
      {R"({"bogus": 1})", "field 'bogus' is not supported"},
      {R"({"start_step": -1})", "field 'start_step'"},
      {R"({"step_interval": 0})", "field 'step_interval'"},
      {R"({"collect_times": "x"})", "field 'collect_times'"},
      {R"({"ndigits": 21})", "field 'ndigits'"},
      {R"({"ndigits": 1.5})", "field 'ndigits'"},
      {R"({"eps": "a"})", "field 'eps'"},
      {R"({"step_count_per_record": 0})", "field 'step_count_per_record'"},
      {R"({"format": "api"})", "field 'format' 'api' is not supported"},
      {R"({"ops": ["norm", "shape"]})", "unknown op 'shape'"},
      {R"({"ops": "norm"})", "field 'ops' must be a list"},
      {R"({"module_ranks": [true]})", "field 'module_ranks'"},
      {R"({"xy_distribution": 1})", "field 'xy_distribution' must be true or false"},
      {R"({"targets": []})", "field 'targets' must be an object"},
      {R"({"targets": {"fc1": "tensor"}})", "field 'targets.fc1' must be an object"},
      {R"({"targets": {"fc1": {"weird": "x"}}})", "field 'targets.fc1.weird' is not supported"},
      {R"({"targets": {"fc1": {"input": 3}}})", "field 'targets.fc1.input'"},
      {R"({"cc_distribution": {"x": 1}})", "field 'cc_distribution.x' is not supported"},
      {R"({"alert": {"rules": [{"rule_name": "Nope"}]}})", "unknown rule 'Nope'"},
      {R"({"alert": {"rules": [{"rule_name": "AnomalyTurbulence"}]}})",
       "field 'alert.rules[0].args.threshold' is required"},
      {R"({"alert": {"rules": [{"rule_name": "AnomalyNan", "args": {"threshold": -1}}]}})",
       "field 'alert.rules[0].args.threshold'"},
      {R"({"alert": {"dump": "yes"}})", "field 'alert.dump'"},
      {R"({"alert": {"rules": [{"args": {}}]}})", "field 'alert.rules[0].rule_name' is missing"},
      {R"({"append_output": ["a"]})", "field 'append_output'"},
      {R"([1])", "must be a JSON object"},
      {R"({"ops": [)", "not valid JSON"},
  };
  for (const auto& [json, expected] : cases) {
    const std::string msg = error_of(json);
    EXPECT_NE(msg.find(expected), std::string::npos) << json << " -> " << msg;
    EXPECT_EQ(msg.rfind("cfg.json", 0), 0u) << msg;
  }
}

TEST(MonitorConfig, CollectsAndRanks) {
  MonitorConfig c = parse_monitor_config(
      R"({"start_step": 2, "step_interval": 3, "collect_times": 2, "module_ranks": [1]})", "c");
  std::vector<int64_t> got;
  for (int64_t s = 0; s < 20; ++s)
    if (c.collects(s)) got.push_back(s);
  EXPECT_EQ(got, (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(c.monitors_rank(1));
  EXPECT_FALSE(c.monitors_rank(0));
  c.module_ranks.clear();
  EXPECT_TRUE(c.monitors_rank(7));
}

}  // namespace
}  // namespace numprobe::monitor
