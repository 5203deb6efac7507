#include "capture/capture_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "numprobe/error.h"
#include "test_support.h"

using namespace numprobe::capture;
using numprobe::InputError;

namespace {

CaptureConfig parse(const std::string& text) {
  return parse_capture_config(text, "config.json");
}

// The message of the InputError parsing `text` throws; fails the test if none is thrown.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "config.json");
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return {};
}

// Asserts the error names the file and each of `parts`.
void expect_error(const std::string& text, const std::vector<std::string>& parts) {
  std::string msg = error_of(text);
  EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' in " << msg;
}

const char* kMstt = R"({
    "task": "statistics",
    "dump_path": "./dump_path",
    "rank": [],
    "step": [],
    "level": "L1",
    "enable_dataloader": false,
    "tensor": {"scope": [], "list":[], "data_mode": ["all"], "file_format": "npy"},
    "statistics": {"scope": [], "list":[], "data_mode": ["all"], "summary_mode": "statistics"},
    "overflow_check": {"overflow_nums": 1, "check_mode":"all"},
    "run_ut": {"white_list": [], "black_list": [], "error_data_path": "./"},
    "grad_probe": {"grad_level": "L1", "param_list": [], "bounds": [-1, 0, 1]},
    "free_benchmark": {"scope": [], "list": [], "fuzz_device": "npu", "pert_mode": "improve_precision",
        "handler_type": "check", "fuzz_level": "L1", "fuzz_stage": "forward", "if_preheat": false,
        "preheat_step": 15, "max_sample": 20}
})";

}  // namespace

TEST(CaptureConfig, EmptyObjectGivesDefaults) {
  CaptureConfig c = parse("{}");
  EXPECT_EQ(c.task, Task::kStatistics);
  EXPECT_EQ(c.dump_path, "./dump_path");
  EXPECT_TRUE(c.ranks.empty());
  EXPECT_TRUE(c.steps.empty());
  EXPECT_EQ(c.level, Level::kL1);
  EXPECT_FALSE(c.async_dump);
  EXPECT_FALSE(c.high_precision);
  EXPECT_TRUE(c.extra_info);
  EXPECT_TRUE(c.scope.empty());
  EXPECT_TRUE(c.list.empty());
  EXPECT_TRUE(c.tensor_list.empty());
  EXPECT_TRUE(c.data_mode.forward && c.data_mode.backward && c.data_mode.input &&
              c.data_mode.output);
  EXPECT_EQ(c.summary_mode, SummaryMode::kStatistics);
  EXPECT_EQ(c.file_format, "npy");
  EXPECT_EQ(c.overflow_nums, 1);
}

TEST(CaptureConfig, ShippedMsttConfigParses) {
  CaptureConfig c = parse(kMstt);
  EXPECT_EQ(c.task, Task::kStatistics);
  EXPECT_EQ(c.level, Level::kL1);
}

TEST(CaptureConfig, ShippedSuccessorConfigParses) {
  CaptureConfig c = parse(R"({"task": "tensor", "dump_path": "/tmp/d", "rank": [], "step": [],
    "level": "mix", "extra_info": false, "async_dump": true,
    "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"},
    "tensor": {"scope": [], "list": [], "data_mode": ["all"]},
    "acc_check": {"white_list": [], "black_list": [], "error_data_path": "./"}})");
  EXPECT_EQ(c.task, Task::kTensor);
  EXPECT_EQ(c.dump_path, "/tmp/d");
  EXPECT_EQ(c.level, Level::kMix);
  EXPECT_FALSE(c.extra_info);
  EXPECT_TRUE(c.async_dump);
}

TEST(CaptureConfig, CommonFields) {
  CaptureConfig c = parse(R"({"task": "statistics", "dump_path": "out", "rank": [1, 0],
    "step": [3], "level": "L0", "async_dump": true, "precision": "high", "extra_info": false,
    "enable_dataloader": true, "dump_enable": false, "risk_level": "CORE"})");
  EXPECT_EQ(c.dump_path, "out");
  EXPECT_EQ(c.ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(c.steps, (std::vector<int64_t>{3}));
  EXPECT_EQ(c.level, Level::kL0);
  EXPECT_TRUE(c.async_dump);
  EXPECT_TRUE(c.high_precision);
  EXPECT_FALSE(c.extra_info);
  EXPECT_FALSE(parse(R"({"precision": "low"})").high_precision);
}

TEST(CaptureConfig, TaskAndLevelNames) {
  for (Task t : {Task::kStatistics, Task::kTensor, Task::kOverflowCheck, Task::kStructure}) {
    EXPECT_EQ(parse_task(task_name(t), "x"), t);
    EXPECT_EQ(parse("{\"task\": \"" + std::string(task_name(t)) + "\"}").task, t);
  }
  for (Level l : {Level::kL0, Level::kL1, Level::kMix, Level::kL2, Level::kDebug}) {
    EXPECT_EQ(parse_level(level_name(l), "x"), l);
  }
  EXPECT_EQ(level_name(Level::kMix), "mix");
  EXPECT_EQ(task_name(Task::kOverflowCheck), "overflow_check");
  EXPECT_EQ(summary_mode_name(SummaryMode::kMd5), "md5");
  try {
    parse_level("l1", "PrecisionDebugger");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "PrecisionDebugger: field \"level\": \"l1\" is not one of L0, L1, L2, mix, debug");
  }
}

TEST(CaptureConfig, BadTaskAndLevel) {
  EXPECT_EQ(error_of(R"({"level": "L3"})"),
            "config.json: field \"level\": \"L3\" is not one of L0, L1, L2, mix, debug");
  expect_error(R"({"task": "stats"})", {"field \"task\"", "\"stats\" is not one of"});
  for (const char* t : {"run_ut", "acc_check", "exception_dump", "nan_check"}) {
    expect_error(std::string(R"({"task": ")") + t + "\"}",
                 {"field \"task\"", std::string("task \"") + t + "\"",
                  "is not a capture task numprobe supports"});
  }
  expect_error(R"({"task": 1})", {"field \"task\"", "expected a string", "number 1"});
  expect_error(R"({"level": null})", {"field \"level\"", "expected a string", "null"});
}

TEST(CaptureConfig, WrongTypesNameFieldAndType) {
  expect_error(R"({"dump_path": 3})", {"field \"dump_path\"", "expected a string"});
  expect_error(R"({"dump_path": ""})", {"field \"dump_path\"", "empty"});
  expect_error(R"({"async_dump": "true"})",
               {"field \"async_dump\"", "expected a boolean", "string \"true\""});
  expect_error(R"({"extra_info": 1})", {"field \"extra_info\"", "expected a boolean"});
  expect_error(R"({"enable_dataloader": 0})", {"field \"enable_dataloader\"", "boolean"});
  expect_error(R"({"dump_enable": "yes"})", {"field \"dump_enable\"", "boolean"});
  expect_error(R"({"precision": "medium"})", {"field \"precision\"", "not one of low, high"});
  expect_error(R"({"precision": true})", {"field \"precision\"", "expected a string"});
  expect_error(R"({"risk_level": "SOME"})", {"field \"risk_level\"", "ALL, CORE, FOCUS"});
  expect_error(R"({"rank": 0})", {"field \"rank\"", "expected a list"});
  expect_error(R"({"step": {}})", {"field \"step\"", "expected a list", "object"});
  expect_error(R"({"statistics": []})", {"field \"statistics\"", "expected an object"});
  expect_error(R"({"statistics": {"list": "relu"}})",
               {"field \"statistics.list\"", "expected a list"});
  expect_error(R"({"statistics": {"list": ["relu", 3]}})",
               {"field \"statistics.list[1]\"", "expected a string"});
  expect_error(R"({"statistics": {"scope": [1, 2]}})",
               {"field \"statistics.scope[0]\"", "expected a string"});
  expect_error(R"({"statistics": {"data_mode": "all"}})",
               {"field \"statistics.data_mode\"", "expected a list"});
}

TEST(CaptureConfig, UnknownFields) {
  expect_error(R"({"dump_pth": "x"})", {"field \"dump_pth\"", "unknown field"});
  expect_error(R"({"load": {}})", {"field \"load\"", "unknown field"});
  expect_error(R"({"statistics": {"lists": []}})",
               {"field \"statistics.lists\"", "unknown field in the statistics section"});
  // tensor_list belongs to statistics only; summary-only fields are not in overflow_check.
  expect_error(R"({"task": "tensor", "tensor": {"tensor_list": ["a"]}})",
               {"field \"tensor.tensor_list\"", "unknown field"});
  expect_error(R"({"task": "overflow_check", "overflow_check": {"list": []}})",
               {"field \"overflow_check.list\"", "unknown field", "overflow_nums"});
  expect_error(R"({"task": "structure", "structure": {"summary_mode": "md5"}})",
               {"field \"structure.summary_mode\"", "unknown field"});
}

TEST(CaptureConfig, OtherTasksSectionsAreIgnored) {
  // Garbage in another task's section, including one that would be invalid if active.
  CaptureConfig c = parse(R"({"task": "tensor", "statistics": {"bogus": 1, "scope": ["a"]},
    "overflow_check": {"overflow_nums": 0}, "structure": 5, "nan_check": {}, "diff_check": {},
    "exception_dump": {}, "tensor": {"list": ["relu"]}})");
  EXPECT_EQ(c.list, (std::vector<std::string>{"relu"}));
  EXPECT_TRUE(c.scope.empty());
  c = parse(R"({"task": "statistics", "tensor": {"tensor_list": 7}})");
  EXPECT_TRUE(c.tensor_list.empty());
}

TEST(CaptureConfig, StatisticsSection) {
  CaptureConfig c = parse(R"({"task": "statistics", "statistics": {
    "scope": ["Functional.relu.0.forward", "Functional.gelu.2.forward"],
    "list": ["relu", "Module.fc.Linear"], "tensor_list": ["conv2d"], "data_mode": ["forward"],
    "summary_mode": "md5", "file_format": "bin", "device": "host", "bench_path": "/x",
    "diff_nums": -1, "slice": []}})");
  EXPECT_EQ(c.scope,
            (std::vector<std::string>{"Functional.relu.0.forward", "Functional.gelu.2.forward"}));
  EXPECT_EQ(c.list, (std::vector<std::string>{"relu", "Module.fc.Linear"}));
  EXPECT_EQ(c.tensor_list, (std::vector<std::string>{"conv2d"}));
  EXPECT_TRUE(c.data_mode.forward);
  EXPECT_FALSE(c.data_mode.backward);
  EXPECT_EQ(c.summary_mode, SummaryMode::kMd5);
  EXPECT_EQ(c.file_format, "bin");
  EXPECT_EQ(parse(R"({"statistics": {"summary_mode": "statistics"}})").summary_mode,
            SummaryMode::kStatistics);
  expect_error(R"({"statistics": {"summary_mode": "xor"}})",
               {"field \"statistics.summary_mode\"", "\"xor\" is not one of statistics, md5"});
  expect_error(R"({"statistics": {"file_format": "pt"}})",
               {"field \"statistics.file_format\"", "npy, bin"});
  expect_error(R"({"statistics": {"device": "gpu"}})",
               {"field \"statistics.device\"", "device, host"});
  expect_error(R"({"statistics": {"diff_nums": 0}})",
               {"field \"statistics.diff_nums\"", "-1 (unlimited) or > 0"});
  expect_error(R"({"statistics": {"bench_path": 1}})",
               {"field \"statistics.bench_path\"", "expected a string"});
  expect_error(R"({"statistics": {"slice": {}}})",
               {"field \"statistics.slice\"", "expected a list"});
}

TEST(CaptureConfig, TensorSection) {
  CaptureConfig c = parse(R"({"task": "tensor", "tensor": {"scope": [], "list": ["conv"],
    "data_mode": ["backward", "output"], "file_format": "npy", "summary_mode": "md5"}})");
  EXPECT_EQ(c.task, Task::kTensor);
  EXPECT_EQ(c.list, (std::vector<std::string>{"conv"}));
  EXPECT_FALSE(c.data_mode.forward);
  EXPECT_TRUE(c.data_mode.backward);
  EXPECT_FALSE(c.data_mode.input);
  EXPECT_TRUE(c.data_mode.output);
  EXPECT_EQ(c.summary_mode, SummaryMode::kMd5);
  // The statistics section is not read when the task is tensor.
  c = parse(R"({"task": "tensor", "statistics": {"list": ["relu"]}})");
  EXPECT_TRUE(c.list.empty());
}

TEST(CaptureConfig, StructureSection) {
  CaptureConfig c = parse(R"({"task": "structure", "structure": {"list": ["relu"], "scope": []}})");
  EXPECT_EQ(c.task, Task::kStructure);
  EXPECT_EQ(c.list, (std::vector<std::string>{"relu"}));
  EXPECT_EQ(parse(R"({"task": "structure"})").task, Task::kStructure);
}

TEST(CaptureConfig, OverflowCheckSection) {
  CaptureConfig c = parse(R"({"task": "overflow_check",
    "overflow_check": {"overflow_nums": 5, "check_mode": "aicore"}})");
  EXPECT_EQ(c.task, Task::kOverflowCheck);
  EXPECT_EQ(c.overflow_nums, 5);
  EXPECT_EQ(
      parse(R"({"task": "overflow_check", "overflow_check": {"overflow_nums": -1}})").overflow_nums,
      -1);
  EXPECT_EQ(parse(R"({"task": "overflow_check"})").overflow_nums, 1);
  for (const char* bad : {"0", "-2"}) {
    expect_error(std::string(R"({"task": "overflow_check", "overflow_check": {"overflow_nums": )") +
                     bad + "}}",
                 {"field \"overflow_check.overflow_nums\"", "-1 (unlimited) or > 0"});
  }
  expect_error(R"({"task": "overflow_check", "overflow_check": {"overflow_nums": 1.5}})",
               {"field \"overflow_check.overflow_nums\"", "expected an integer"});
  expect_error(R"({"task": "overflow_check", "overflow_check": {"overflow_nums": true}})",
               {"field \"overflow_check.overflow_nums\"", "expected an integer"});
  expect_error(R"({"task": "overflow_check", "overflow_check": {"check_mode": "cube"}})",
               {"field \"overflow_check.check_mode\"", "all, aicore, atomic"});
}

TEST(CaptureConfig, ScopeNeedsZeroOrTwoItems) {
  EXPECT_TRUE(parse(R"({"statistics": {"scope": []}})").scope.empty());
  expect_error(R"({"statistics": {"scope": ["Functional.relu.0.forward"]}})",
               {"field \"statistics.scope\"", "exactly 2", "got 1"});
  expect_error(R"({"statistics": {"scope": ["a", "b", "c"]}})",
               {"field \"statistics.scope\"", "got 3"});
  expect_error(R"({"statistics": {"scope": ["", "b"]}})",
               {"field \"statistics.scope[0]\"", "empty string"});
}

TEST(CaptureConfig, ListItems) {
  expect_error(R"({"statistics": {"list": ["relu", ""]}})",
               {"field \"statistics.list[1]\"", "empty string"});
  expect_error(R"j({"statistics": {"list": ["name-regex(conv.*)"]}})j",
               {"field \"statistics.list[0]\"", "MindSpore graph mode"});
  expect_error(R"({"statistics": {"tensor_list": [""]}})",
               {"field \"statistics.tensor_list[0]\"", "empty string"});
}

TEST(CaptureConfig, StepAndRankRanges) {
  CaptureConfig c = parse(R"({"step": [5, "0-2", "1-3", 2, "7", "7-7"], "rank": ["3-4", 0, "0"]})");
  EXPECT_EQ(c.steps, (std::vector<int64_t>{0, 1, 2, 3, 5, 7}));
  EXPECT_EQ(c.ranks, (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(max_step(c), 7);
  EXPECT_TRUE(step_selected(c, 3));
  EXPECT_FALSE(step_selected(c, 4));
  EXPECT_FALSE(step_selected(c, 8));
  EXPECT_TRUE(rank_selected(c, 4));
  EXPECT_FALSE(rank_selected(c, 1));

  CaptureConfig all = parse("{\"step\": [], \"rank\": []}");
  EXPECT_EQ(max_step(all), -1);
  EXPECT_TRUE(step_selected(all, 123456));
  EXPECT_TRUE(rank_selected(all, 7));

  // Repeated wide ranges are merged, not expanded twice.
  CaptureConfig wide = parse(R"({"step": ["0-1000000", "0-1000000", "5-10"]})");
  EXPECT_EQ(wide.steps.size(), 1000001u);
  EXPECT_EQ(max_step(wide), 1000000);
}

TEST(CaptureConfig, StepAndRankErrors) {
  expect_error(R"({"step": [-1]})", {"field \"step[0]\"", "-1 is outside [0, 1000000]"});
  expect_error(R"({"rank": [0, 1000001]})", {"field \"rank[1]\"", "outside"});
  expect_error(R"({"step": ["3-1"]})", {"field \"step[0]\"", "\"3-1\"", "left bound greater"});
  expect_error(R"({"step": ["a-b"]})", {"field \"step[0]\"", "\"a-b\"", "\"a-b\" range"});
  expect_error(R"({"step": ["1-2-3"]})", {"field \"step[0]\"", "\"1-2-3\""});
  expect_error(R"({"step": ["-3"]})", {"field \"step[0]\""});
  expect_error(R"({"step": ["1-"]})", {"field \"step[0]\""});
  expect_error(R"({"step": [" 1"]})", {"field \"step[0]\""});
  expect_error(R"({"rank": [""]})", {"field \"rank[0]\""});
  expect_error(R"({"step": ["0-99999999999999999999"]})", {"field \"step[0]\""});
  expect_error(R"({"step": [1.0]})",
               {"field \"step[0]\"", "expected an integer or an \"a-b\" string", "number 1.0"});
  expect_error(R"({"rank": [true]})", {"field \"rank[0]\"", "boolean true"});
  expect_error(R"({"rank": [[1]]})", {"field \"rank[0]\"", "array"});
  expect_error(R"({"step": [18446744073709551615]})", {"field \"step[0]\"", "out of range"});
}

TEST(CaptureConfig, DataModeRules) {
  auto dm = [](const std::string& list) {
    return parse("{\"statistics\": {\"data_mode\": " + list + "}}").data_mode;
  };
  auto is = [](const DataMode& d, bool f, bool b, bool i, bool o) {
    return d.forward == f && d.backward == b && d.input == i && d.output == o;
  };
  EXPECT_TRUE(is(dm(R"(["all"])"), true, true, true, true));
  EXPECT_TRUE(is(dm("[]"), true, true, true, true));
  EXPECT_TRUE(is(dm(R"(["forward"])"), true, false, true, true));
  EXPECT_TRUE(is(dm(R"(["backward"])"), false, true, true, true));
  EXPECT_TRUE(is(dm(R"(["input"])"), true, true, true, false));
  EXPECT_TRUE(is(dm(R"(["output"])"), true, true, false, true));
  EXPECT_TRUE(is(dm(R"(["forward", "input"])"), true, false, true, false));
  EXPECT_TRUE(is(dm(R"(["forward", "backward"])"), true, true, true, true));
  EXPECT_TRUE(is(dm(R"(["backward", "input", "output"])"), false, true, true, true));
  EXPECT_TRUE(is(dm(R"(["forward", "forward"])"), true, false, true, true));
  EXPECT_TRUE(is(dm(R"(["forward", "backward", "input", "output"])"), true, true, true, true));

  expect_error(R"({"statistics": {"data_mode": ["all", "forward"]}})",
               {"field \"statistics.data_mode\"", "\"all\" cannot be combined"});
  expect_error(R"({"statistics": {"data_mode": ["all", "all"]}})",
               {"field \"statistics.data_mode\"", "cannot be combined"});
  expect_error(
      R"({"statistics": {"data_mode": ["forward", "backward", "input", "output", "forward"]}})",
      {"field \"statistics.data_mode\"", "at most 4"});
  expect_error(R"({"statistics": {"data_mode": ["fwd"]}})",
               {"field \"statistics.data_mode[0]\"", "\"fwd\" is not one of all, forward"});
  expect_error(R"({"task": "structure", "structure": {"data_mode": ["all"]}})",
               {"field \"structure.data_mode\"", "unknown field"});
}

TEST(CaptureConfig, MalformedJsonHasByteOffset) {
  try {
    parse("{\"task\": \"statistics\",, }");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "config.json");
    EXPECT_EQ(e.offset(), 22);  // the second comma
    std::string msg = e.what();
    EXPECT_NE(msg.find("config.json (byte 22)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
  }
  expect_error("", {"malformed JSON"});
  expect_error("{\"task\": \"statistics\"", {"malformed JSON"});
  expect_error("{\"a\": NaN}", {"malformed JSON"});
  expect_error("{} {}", {"malformed JSON"});
  expect_error("[1, 2]", {"top level", "array"});
  expect_error("\"x\"", {"top level", "string"});
}

TEST(CaptureConfig, DuplicateKeysAreErrors) {
  expect_error(R"({"task": "tensor", "task": "statistics"})", {"field \"task\" appears twice"});
  expect_error(R"({"statistics": {"list": [], "list": ["relu"]}})",
               {"field \"statistics.list\" appears twice"});
  // Same key in sibling objects is fine.
  EXPECT_NO_THROW(parse(R"({"statistics": {"list": []}, "tensor": {"list": []}})"));
}

TEST(CaptureConfig, MessagesQuoteAndTruncateUserText) {
  std::string msg = error_of("{\"level\": \"" + std::string(500, 'x') + "\\n\"}");
  EXPECT_LT(msg.size(), 200u) << msg;
  EXPECT_NE(msg.find("..."), std::string::npos);
  msg = error_of("{\"level\": \"a\\u0001b\"}");
  EXPECT_NE(msg.find("\\u0001"), std::string::npos) << msg;
}

TEST(CaptureConfig, LoadFromFile) {
  std::string dir = numprobe::testing::scratch_dir("capture_config_load");
  std::string path = dir + "/config.json";
  numprobe::testing::write_file(path, kMstt);
  CaptureConfig c = load_capture_config(path);
  EXPECT_EQ(c.task, Task::kStatistics);

  numprobe::testing::write_file(path, R"({"level": "L9"})");
  try {
    load_capture_config(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(std::string(e.what()).find(path + ": field \"level\""), std::string::npos);
  }

  std::string missing = dir + "/nope.json";
  try {
    load_capture_config(missing);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
  // A directory is not a config file.
  EXPECT_THROW(load_capture_config(dir), InputError);
}

// Regression (found by capture_config_fuzz): a number too large for a double made the JSON library
// of the time throw an exception that escaped as std::terminate instead of an InputError. The
// strict reader (base/json_tree.h) reports it, with its offset.
TEST(CaptureConfig, NumberOverflowIsAnInputError) {
  expect_error(R"({"step": [1e999]})", {"config.json", "number overflow"});
  expect_error(R"({"run_ut": {"x": 1e999}})", {"config.json", "number overflow"});
  expect_error(R"({"step": [1e999]})", {"config.json (byte 10)", "malformed JSON"});
}

TEST(CaptureConfig, GradProbeSection) {
  auto cfg = parse_capture_config(
      R"({"task": "grad_probe", "grad_probe": {"grad_level": "L2", "param_list": ["fc.weight"],
          "bounds": [-1e-3, 0, 0.5, 2]}})",
      "config.json");
  EXPECT_EQ(cfg.task, Task::kGradProbe);
  EXPECT_EQ(cfg.grad_probe.level, GradLevel::kL2);
  EXPECT_EQ(cfg.grad_probe.param_list, std::vector<std::string>{"fc.weight"});
  EXPECT_EQ(cfg.grad_probe.bounds, (std::vector<double>{-1e-3, 0, 0.5, 2}));
  // Column names print the bounds as Python does: floats as repr(), integers as written.
  EXPECT_EQ(cfg.grad_probe.bounds_text, (std::vector<std::string>{"-0.001", "0", "0.5", "2"}));
  auto dflt = parse_capture_config(R"({"task": "grad_probe"})", "config.json");
  EXPECT_EQ(dflt.grad_probe.level, GradLevel::kL1);
  EXPECT_EQ(dflt.grad_probe.bounds_text, (std::vector<std::string>{"-1", "0", "1"}));
}

TEST(CaptureConfig, GradProbeBadValuesNameTheField) {
  const std::string pre = R"({"task": "grad_probe", "grad_probe": )";
  expect_error(pre + R"({"grad_level": "L3"}})",
               {"field \"grad_probe.grad_level\"", "\"L3\" is not one of L0, L1, L2"});
  expect_error(pre + R"({"bounds": [0, 0]}})",
               {"field \"grad_probe.bounds\"", "strictly ascending"});
  expect_error(pre + R"({"bounds": []}})", {"field \"grad_probe.bounds\"", "empty"});
  expect_error(pre + R"({"bounds": [1, "2"]}})",
               {"field \"grad_probe.bounds[1]\"", "expected a number"});
  expect_error(pre + R"({"bounds": [1e30]}})", {"grad_probe.bounds[0]", "int64"});
  expect_error(pre + R"({"param_list": "fc"}})", {"grad_probe.param_list", "expected a list"});
  expect_error(pre + R"({"grad_lvl": "L1"}})", {"grad_probe.grad_lvl", "unknown field"});
}
