// free_benchmark: its config section (capture_config.cc, free_benchmark_config.cc) and the
// comparisons (free_benchmark_compare.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "capture/capture_config.h"
#include "capture/capture_session.h"
#include "capture/free_benchmark_compare.h"
#include "numprobe/error.h"

using namespace numprobe::capture;
using numprobe::InputError;

namespace {

CaptureConfig parse_fb(const std::string& section, const std::string& top = "") {
  return parse_capture_config(
      R"({"task": "free_benchmark", )" + top + R"("free_benchmark": {)" + section + "}}",
      "config.json");
}

std::string error_of(const std::string& section, const std::string& top = "") {
  try {
    parse_fb(section, top);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << section;
  return {};
}

void expect_error(const std::string& section, const std::vector<std::string>& parts,
                  const std::string& top = "") {
  std::string msg = error_of(section, top);
  EXPECT_EQ(msg.rfind("config.json: ", 0), 0u) << msg;
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " in " << msg;
}

}  // namespace

TEST(FreeBenchmarkConfig, DefaultsAreMsprobes) {
  CaptureConfig c = parse_fb("");
  EXPECT_EQ(c.task, Task::kFreeBenchmark);
  EXPECT_EQ(task_name(c.task), "free_benchmark");
  EXPECT_EQ(c.free_benchmark.pert_mode, "improve_precision");
  EXPECT_EQ(c.free_benchmark.handler_type, "check");
  EXPECT_EQ(c.free_benchmark.fuzz_stage, "forward");
  EXPECT_EQ(c.free_benchmark.fuzz_device, "npu");
  EXPECT_FALSE(c.free_benchmark.if_preheat);
  EXPECT_EQ(c.free_benchmark.preheat_step, 15);
  EXPECT_EQ(c.free_benchmark.max_sample, 20);
}

TEST(FreeBenchmarkConfig, ReadsEveryField) {
  CaptureConfig c = parse_fb(
      R"("scope": [], "list": ["softmax"], "fuzz_device": "npu", "pert_mode": "bit_noise",
         "handler_type": "check", "fuzz_level": "L1", "fuzz_stage": "backward",
         "if_preheat": true, "preheat_step": 3, "max_sample": 7)");
  EXPECT_EQ(c.list, std::vector<std::string>{"softmax"});
  EXPECT_EQ(c.free_benchmark.pert_mode, "bit_noise");
  EXPECT_EQ(c.free_benchmark.fuzz_stage, "backward");
  EXPECT_TRUE(c.free_benchmark.if_preheat);
  EXPECT_EQ(c.free_benchmark.preheat_step, 3);
  EXPECT_EQ(c.free_benchmark.max_sample, 7);
  for (const char* m : kPertModes) {
    std::string dev = std::string(m) == "to_cpu" ? "cpu" : "npu";
    EXPECT_EQ(parse_fb(std::string(R"("pert_mode": ")") + m + R"(", "fuzz_device": ")" + dev + "\"")
                  .free_benchmark.pert_mode,
              m);
  }
}

TEST(FreeBenchmarkConfig, BadValuesNameTheField) {
  expect_error(R"("pert_mode": "noise")",
               {"field \"free_benchmark.pert_mode\"", "\"noise\" is not one of", "bit_noise"});
  expect_error(R"("handler_type": "repair")", {"free_benchmark.handler_type", "check, fix"});
  expect_error(R"("fuzz_stage": "both")", {"free_benchmark.fuzz_stage", "forward, backward"});
  expect_error(R"("fuzz_level": "L2")", {"free_benchmark.fuzz_level"});
  expect_error(R"("fuzz_device": "gpu")", {"free_benchmark.fuzz_device"});
  expect_error(R"("max_sample": 0)", {"free_benchmark.max_sample", "must be > 0"});
  expect_error(R"("preheat_step": -1)", {"free_benchmark.preheat_step"});
  expect_error(R"("if_preheat": 1)", {"free_benchmark.if_preheat", "expected a boolean"});
  expect_error(R"("overflow_nums": 1)", {"free_benchmark.overflow_nums", "unknown field"});
}

TEST(FreeBenchmarkConfig, RulesBetweenFields) {
  expect_error(R"("handler_type": "fix", "fuzz_stage": "backward", "list": ["relu"])",
               {"fuzz_stage", "cannot apply to the backward stage"});
  expect_error(R"("handler_type": "fix", "pert_mode": "add_noise")",
               {"pert_mode", "improve_precision or to_cpu"});
  expect_error(R"("handler_type": "fix", "if_preheat": true)", {"if_preheat"});
  expect_error(R"("fuzz_device": "cpu")", {"fuzz_device", "to_cpu"});
  expect_error(R"("pert_mode": "to_cpu")", {"fuzz_device", "to_cpu"});
  expect_error(R"("fuzz_stage": "backward")", {"free_benchmark.list", "non-empty"});
  expect_error("", {"level", "L1"}, R"("level": "mix", )");
  EXPECT_NO_THROW(
      parse_fb(R"("handler_type": "fix", "pert_mode": "to_cpu", "fuzz_device": "cpu")"));
}

TEST(FreeBenchmarkConfig, CaptureSessionRefusesTheTask) {
  // The Python torch front runs free_benchmark; a session would dump statistics instead.
  try {
    CaptureSession s(parse_fb(""));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("free_benchmark"), std::string::npos) << e.what();
  }
}

TEST(FreeBenchmarkCompare, RatioIsOneForEqualOutputs) {
  std::vector<double> a = {1, -2, 3e-9, 0};
  EXPECT_EQ(perturbation_ratio(a.data(), a.data(), a.size(), 1e-4).ratio, 1.0);
  EXPECT_FALSE(perturbation_ratio(a.data(), a.data(), a.size(), 1e-4).sign_flipped);
  EXPECT_EQ(perturbation_ratio(static_cast<const double*>(nullptr), nullptr, 0, 1e-4).ratio, 1.0);
}

TEST(FreeBenchmarkCompare, RatioIsTheLargestRelativeMove) {
  std::vector<double> o = {1.0, 10.0, 5e-5}, p = {1.0, 10.5, 9e-5};
  double r = perturbation_ratio(o.data(), p.data(), o.size(), 1e-4).ratio;
  EXPECT_DOUBLE_EQ(r, 10.5 / 10.0);
  // either direction gives the same ratio
  EXPECT_DOUBLE_EQ(perturbation_ratio(p.data(), o.data(), o.size(), 1e-4).ratio, r);
  // values below abs_tol count as abs_tol: on both sides they do not count, however far apart
  // relatively; on one side the other is measured against abs_tol
  std::vector<double> so = {1e-6}, sp = {9e-5}, sq = {3e-4};
  EXPECT_EQ(perturbation_ratio(so.data(), sp.data(), 1, 1e-4).ratio, 1.0);
  EXPECT_DOUBLE_EQ(perturbation_ratio(so.data(), sq.data(), 1, 1e-4).ratio, 3e-4 / 1e-4);
}

TEST(FreeBenchmarkCompare, SignFlipsBeyondTheToleranceAreFlagged) {
  std::vector<double> o = {1.0, 5e-3, -2.0}, p = {1.0, -5e-3, -2.0};
  EXPECT_FALSE(perturbation_ratio(o.data(), p.data(), 3, 0.01).sign_flipped);  // 2.5e-5 < tol^2
  EXPECT_TRUE(perturbation_ratio(o.data(), p.data(), 3, 1e-3).sign_flipped);
  // past the 16-lane blocks, in float, with a tolerance whose square is below float's range
  std::vector<float> of(40, 1.0f), pf(40, 1.0f);
  pf[37] = -1.0f;
  EXPECT_TRUE(perturbation_ratio(of.data(), pf.data(), of.size(), 1e-30).sign_flipped);
  pf[37] = 1.0f, pf[5] = -1.0f;
  EXPECT_TRUE(perturbation_ratio(of.data(), pf.data(), of.size(), 1e-30).sign_flipped);
}

TEST(FreeBenchmarkCompare, NonFinitePairsAreSkipped) {
  std::vector<double> o = {NAN, 1.0, INFINITY}, p = {-1.0, 2.0, -1.0};
  EXPECT_DOUBLE_EQ(perturbation_ratio(o.data(), p.data(), 3, 1e-4).ratio, 2.0);
  EXPECT_FALSE(perturbation_ratio(o.data(), p.data(), 3, 1e-4).sign_flipped);
  // past the 16-lane blocks too, in float
  std::vector<float> of(40, 1.0f), pf(40, 1.0f);
  of[3] = NAN, pf[20] = INFINITY, of[37] = 3.0f;
  EXPECT_FLOAT_EQ(
      static_cast<float>(perturbation_ratio(of.data(), pf.data(), of.size(), 1e-4).ratio), 3.0f);
}

TEST(FreeBenchmarkCompare, BenchmarkErrors) {
  std::vector<double> actual = {0.5, 4.0, -2.0}, golden = {0.25, 2.0, -2.0};
  BenchmarkErrors e = benchmark_errors(actual.data(), golden.data(), 3, 1.0);
  EXPECT_TRUE(e.golden_finite);
  EXPECT_DOUBLE_EQ(e.max_abs_small, 0.25);
  EXPECT_DOUBLE_EQ(e.max_rel, 1.0);
  EXPECT_DOUBLE_EQ(e.err_balance, (0.25 / 1.0 + 2.0 / 2.0 + 0.0) / 3);
  std::vector<double> bad_golden = {1.0, NAN, 0.0};
  EXPECT_FALSE(benchmark_errors(actual.data(), bad_golden.data(), 3, 1.0).golden_finite);
  std::vector<double> nan_actual = {NAN};
  std::vector<double> g1 = {3.0};
  EXPECT_DOUBLE_EQ(benchmark_errors(nan_actual.data(), g1.data(), 1, 1.0).max_rel,
                   2.0 / 3.0);  // NaN counts as 1
}

TEST(FreeBenchmarkCompare, FloatAndDoubleAgree) {
  std::vector<double> o = {1.0, 10.0, 5e-5, -3.0}, p = {1.0, 10.5, 9e-5, -2.0};
  std::vector<float> of(o.begin(), o.end()), pf(p.begin(), p.end());
  EXPECT_NEAR(perturbation_ratio(of.data(), pf.data(), of.size(), 1e-4).ratio,
              perturbation_ratio(o.data(), p.data(), o.size(), 1e-4).ratio, 1e-6);
  EXPECT_DOUBLE_EQ(perturbation_ratio(o.data(), p.data(), o.size(), 1e-4).ratio, 3.0 / 2.0);
}
