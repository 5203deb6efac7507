// Pairing inside module instances and the judgement of a module whose runs call other APIs for the
// same math (issue 36), on small hand-written dump pairs with construct.json.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "numprobe/compare.h"
#include "test_support.h"

namespace numprobe {
namespace {

struct T {
  double max = 1, min = -1, mean = 0, norm = 3;
  std::string shape = "[4, 8]";
  bool requires_grad = false;
  bool none = false;
};

// An entry with its enclosing module ("" at the top).
struct E {
  std::string name, parent;
  std::vector<T> in, out;
};

std::string leaf(const T& t) {
  if (t.none) return "null";
  std::ostringstream s;
  s.precision(17);
  s << R"({"type": "torch.Tensor", "dtype": "torch.float32", "shape": )" << t.shape
    << R"(, "Max": )" << t.max << ", \"Min\": " << t.min << ", \"Mean\": " << t.mean
    << ", \"Norm\": " << t.norm << ", \"requires_grad\": " << (t.requires_grad ? "true" : "false")
    << "}";
  return s.str();
}

void write_side(const std::string& dir, const std::vector<E>& entries) {
  std::string d = R"({"task": "statistics", "level": "mix", "framework": "pytorch", "data": {)";
  std::string c = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    const E& e = entries[i];
    d += (i ? ", \"" : "\"") + e.name + "\": {\"input_args\": [";
    for (size_t k = 0; k < e.in.size(); ++k) d += (k ? ", " : "") + leaf(e.in[k]);
    d += "], \"input_kwargs\": {}, \"output\": [";
    for (size_t k = 0; k < e.out.size(); ++k) d += (k ? ", " : "") + leaf(e.out[k]);
    d += "]}";
    c += (i ? ", \"" : "\"") + e.name +
         "\": " + (e.parent.empty() ? "null" : "\"" + e.parent + "\"");
  }
  testing::write_file(dir + "/dump.json", d + "}}");
  testing::write_file(dir + "/construct.json", c + "}");
}

const PairResult& compare(const std::string& test, const std::vector<E>& target,
                          const std::vector<E>& golden, CompareReport& keep) {
  const std::string dir = testing::scratch_dir("implementation_" + test);
  std::filesystem::create_directories(dir + "/t");
  std::filesystem::create_directories(dir + "/g");
  write_side(dir + "/t", target);
  write_side(dir + "/g", golden);
  keep = compare_dumps(dir + "/t/dump.json", dir + "/g/dump.json", 1);
  return keep.pairs.at(0);
}

const char* kNorm = "Module.norm.RMSNorm.forward.0";
const T x{2, -2, 0.1, 5};                       // the batch
const T sq{4, 0, 0.5, 9};                       // x^2
const T ms{0.6, 0.4, 0.5, 1.4};                 // its mean
const T inv{1.6, 1.2, 1.4, 3.9};                // 1 / sqrt(mean + eps)
const T y{2.5, -2.5, 0.12, 6};                  // the normalised x
const T w{0.5, -0.5, 0.01, 2, "[8, 8]", true};  // a linear's weight
const T z{3, -3, 0.2, 7};                       // linear(y, w)

// x * rsqrt(mean(x^2) + eps), then a linear: the golden.
std::vector<E> handwritten() {
  return {{"Tensor.pow.0.forward", kNorm, {x}, {sq}},
          {"Tensor.mean.0.forward", kNorm, {sq}, {ms}},
          {"Torch.rsqrt.0.forward", kNorm, {ms}, {inv}},
          {"Tensor.__mul__.0.forward", kNorm, {x, inv}, {y}},
          {kNorm, "", {x}, {y}},
          {"Functional.linear.0.forward", "", {y, w}, {z}}};
}

// x / sqrt(mean(x * x) + eps): the same math in other calls, the result `scale` times the golden's.
std::vector<E> onecall(double scale) {
  T rt{0.8, 0.6, 0.7, 1.9}, out = y;
  out.max *= scale;
  out.min *= scale;
  out.norm *= scale;
  return {{"Tensor.__mul__.0.forward", kNorm, {x, x}, {sq}},
          {"Torch.mean.0.forward", kNorm, {sq}, {ms}},
          {"Torch.sqrt.0.forward", kNorm, {ms}, {rt}},
          {"Tensor.__truediv__.0.forward", kNorm, {x, rt}, {out}},
          {kNorm, "", {x}, {out}},
          {"Functional.linear.0.forward", "", {out, w}, {z}}};
}

TEST(ModulePairing, CallsPairInsideTheirModuleWhateverTheCountersElsewhere) {
  // The golden builds a mask with two more aranges in the model; the rotary table's arange is the
  // 2nd call in the target and the 4th in the golden.
  const T pos{15, 0, 7.5, 35}, two{1, 0, 0.5, 1};
  std::vector<E> t = {{"Torch.arange.0.forward", "Module.model.Model.forward.0", {}, {pos}},
                      {"Torch.arange.1.forward", "Module.rotary.Rotary.forward.0", {}, {pos}},
                      {"Module.rotary.Rotary.forward.0", "Module.model.Model.forward.0", {}, {pos}},
                      {"Module.model.Model.forward.0", "", {}, {pos}}};
  std::vector<E> g = {{"Torch.arange.0.forward", "Module.model.Model.forward.0", {}, {pos}},
                      {"Torch.arange.1.forward", "Module.model.Model.forward.0", {}, {two}},
                      {"Torch.arange.2.forward", "Module.model.Model.forward.0", {}, {two}},
                      {"Torch.arange.3.forward", "Module.rotary.Rotary.forward.0", {}, {pos}},
                      {"Module.rotary.Rotary.forward.0", "Module.model.Model.forward.0", {}, {pos}},
                      {"Module.model.Model.forward.0", "", {}, {pos}}};
  CompareReport r;
  const PairResult& p = compare("pairing", t, g, r);
  EXPECT_EQ(p.entries.golden_of.at(1), 3);  // the rotary's arange, renumbered
  EXPECT_EQ(p.entries.how.at(1), MatchKind::kRenumbered);
  EXPECT_EQ(p.entries.golden_of.at(0), 0);
  EXPECT_EQ(p.entries.how.at(0), MatchKind::kExact);
  EXPECT_EQ(p.entries.golden_only, (std::vector<uint32_t>{1, 2}));
}

TEST(ModulePairing, BackwardCallsKeepTheirForwardCounters) {
  // A detach cut transpose.8's backward from the target: its transpose.7 is still the golden's 7,
  // though it is the first transpose backward of the module in the target and the second in the
  // golden.
  const char* m = "Module.attn.Attention.backward.0";
  std::vector<E> t = {{"Tensor.transpose.7.backward", m, {x}, {x}}, {m, "", {x}, {x}}};
  std::vector<E> g = {{"Tensor.transpose.8.backward", m, {y}, {y}},
                      {"Tensor.transpose.7.backward", m, {x}, {x}},
                      {m, "", {x}, {x}}};
  CompareReport r;
  const PairResult& p = compare("backward_counters", t, g, r);
  EXPECT_EQ(p.entries.golden_of.at(0), 1);
  EXPECT_EQ(p.entries.how.at(0), MatchKind::kExact);
}

TEST(ModulePairing, ABackwardPairsThroughItsForward) {
  // Counters shifted by two calls elsewhere; the tools put the backward under other parents.
  const char* m = "Module.block.Block.forward.0";
  std::vector<E> t = {{"Tensor.__mul__.5.forward", m, {x}, {y}},
                      {m, "", {x}, {y}},
                      {"Tensor.__mul__.5.backward", "Module.block.Block.backward.0", {y}, {x}}};
  std::vector<E> g = {{"Tensor.__mul__.5.forward", "", {z}, {z}},
                      {"Tensor.__mul__.7.forward", m, {x}, {y}},
                      {m, "", {x}, {y}},
                      {"Tensor.__mul__.5.backward", "", {z}, {z}},
                      {"Tensor.__mul__.7.backward", "Module.relu.ReLU.backward.0", {y}, {x}}};
  CompareReport r;
  const PairResult& p = compare("backward_by_forward", t, g, r);
  EXPECT_EQ(p.entries.golden_of.at(0), 1);
  EXPECT_EQ(p.entries.golden_of.at(2), 4);
  EXPECT_EQ(p.entries.how.at(2), MatchKind::kRenumbered);
}

TEST(ModuleJudgement, OtherCallsForTheSameMathWithinRoundingAreNoDivergence) {
  CompareReport r;
  const PairResult& p = compare("same_math", onecall(1 + 2e-7), handwritten(), r);
  EXPECT_FALSE(p.first_divergence) << p.first_divergence->entry;
  ASSERT_EQ(p.implementations.size(), 1u);
  const ImplementationDiffers& d = p.implementations[0];
  EXPECT_EQ(d.module, kNorm);
  EXPECT_FALSE(d.diverges);
  EXPECT_GT(d.output_discrepancy, 0);
  EXPECT_LE(d.output_discrepancy, d.tolerance);
  EXPECT_EQ(d.golden_calls,
            (std::vector<std::string>{"Tensor.pow.forward", "Tensor.mean.forward",
                                      "Torch.rsqrt.forward", "Tensor.__mul__.forward"}));
  EXPECT_EQ(d.target_calls.at(3), "Tensor.__truediv__.forward");
  EXPECT_EQ(p.regime, "reduction_order");
}

TEST(ModuleJudgement, OtherCallsWhoseResultDiffersBeyondNoiseAreNamedInsideTheModule) {
  CompareReport r;
  const PairResult& p = compare("other_math", onecall(1 + 1e-3), handwritten(), r);
  ASSERT_TRUE(p.first_divergence);
  EXPECT_EQ(p.first_divergence->module, kNorm);
  ASSERT_EQ(p.implementations.size(), 1u);
  EXPECT_TRUE(p.implementations[0].diverges);
}

TEST(ModuleJudgement, AFaultAfterTheModuleIsStillNamed) {
  auto t = onecall(1 + 2e-7);
  t[5].in[1].max *= 1 + 1e-3;  // the linear's weight loaded wrong
  CompareReport r;
  const PairResult& p = compare("fault_after", t, handwritten(), r);
  ASSERT_TRUE(p.first_divergence);
  EXPECT_EQ(p.first_divergence->entry, "Functional.linear.0.forward");
  EXPECT_EQ(p.first_divergence->reason, "parameters_differ");
}

TEST(ModuleJudgement, OneCallSwappedForAnotherIsJudgedAsThatCall) {
  // Another activation: a single call replaced in the same sequence is no other implementation.
  auto t = handwritten();
  t[2].name = "Torch.sqrt.0.forward";
  CompareReport r;
  const PairResult& p = compare("one_swap", t, handwritten(), r);
  EXPECT_TRUE(p.implementations.empty());
}

TEST(ModuleJudgement, AMaskOnlyOneImplementationBuildsIsNoArgumentDifference) {
  // Eager attention needs a float mask the model builds with calls of its own; sdpa passes None.
  const char* model = "Module.model.Model.forward.0";
  const char* layer = "Module.layers.0.Layer.forward.0";
  const T ids{10, 0, 4, 30, "[2, 16]"}, mask{0, -3.4e38, -1e38, 1e39, "[2, 1, 16, 16]"};
  const T range{15, 0, 7.5, 35, "[16]"};
  auto golden = [&](const T& weight) {
    return std::vector<E>{{"Torch.arange.0.forward", model, {}, {range}},
                          {"Torch.where.0.forward", model, {range}, {mask}},
                          {"Functional.linear.0.forward", layer, {x, weight}, {z}},
                          {layer, model, {x, mask}, {z}},
                          {model, "", {ids}, {z}}};
  };
  auto target = [&](const T& weight) {
    return std::vector<E>{{"Functional.linear.0.forward", layer, {x, weight}, {z}},
                          {layer, model, {x, T{0, 0, 0, 0, "[]", false, true}}, {z}},
                          {model, "", {ids}, {z}}};
  };
  CompareReport r1;
  const PairResult& clean = compare("mask", target(w), golden(w), r1);
  EXPECT_FALSE(clean.first_divergence) << clean.first_divergence->entry;
  CompareReport r0;
  const PairResult& reverse = compare("mask_reverse", golden(w), target(w), r0);
  EXPECT_FALSE(reverse.first_divergence) << reverse.first_divergence->entry;
  T wrong = w;
  wrong.max *= 1 + 1e-3;
  CompareReport r2;
  const PairResult& faulty = compare("mask_fault", target(wrong), golden(w), r2);
  ASSERT_TRUE(faulty.first_divergence);
  EXPECT_EQ(faulty.first_divergence->entry, "Functional.linear.0.forward");
}

// The steps after the forward: a backward at the top, then (golden only) an optimizer step
// outside every module, as a plain Adam's per-parameter calls are dumped and a fused one's are not.
std::vector<E> with_step(std::vector<E> side, bool step) {
  side.push_back({"Functional.linear.0.backward", "", {z}, {y, w}});
  if (!step) return side;
  for (int k = 0; k < 3; ++k) {
    const std::string n = std::to_string(k);
    side.push_back({"Tensor.mul_." + n + ".forward", "", {w, w}, {w}});
    side.push_back({"Tensor.addcdiv_." + n + ".forward", "", {w, w, w}, {w}});
  }
  return side;
}

TEST(OptimizerStep, AStepOnlyOneRunRecordsLeavesTheRunsCompared) {
  CompareReport r;
  const PairResult& p =
      compare("step_one_side", with_step(handwritten(), false), with_step(handwritten(), true), r);
  EXPECT_EQ(p.unmatched_golden, 3u * (3 + 4));  // the step's rows, each unmatched
  EXPECT_GT(p.unmatched_golden, p.matched);
  EXPECT_EQ(pair_coverage(p), Coverage::kCompared);
  EXPECT_FALSE(p.first_divergence) << p.first_divergence->entry;
}

TEST(OptimizerStep, CallsOfTheOtherRunAtTheTopBeforeTheBackwardAreNoStep) {
  // The same one-sided calls before the backward pass: the runs' forward differs, no step.
  std::vector<E> golden = with_step(handwritten(), true);
  std::vector<E> moved(golden.begin() + 7, golden.end());
  golden.resize(7);
  golden.insert(golden.begin() + 6, moved.begin(), moved.end());
  CompareReport r;
  const PairResult& p =
      compare("calls_before_backward", with_step(handwritten(), false), golden, r);
  EXPECT_EQ(pair_coverage(p), Coverage::kMostlyUnmatched);
}

}  // namespace
}  // namespace numprobe
