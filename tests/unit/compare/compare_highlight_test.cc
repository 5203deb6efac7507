// msprobe's row highlighting (reference/msprobe.md 2.9; src/compare/compare_xlsx.h), NaN
// fixed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "compare/compare_xlsx.h"

using namespace numprobe;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A matched row with numeric NPU max, Bench max and max diff, and clean metrics.
HighlightInput row(RowState state, double max_diff = 0) {
  HighlightInput r;
  r.state = state;
  r.npu_max = r.bench_max = true;
  r.has_max_diff = true;
  r.max_diff = max_diff;
  r.has_max_rel = true;
  r.max_rel = 0;
  r.has_one_thousandth = true;
  r.one_thousandth = 1;
  r.has_cosine = true;
  r.cosine = 1;
  return r;
}
HighlightInput in(double max_diff = 0) {
  return row(RowState::kInput, max_diff);
}
HighlightInput out(double max_diff = 0) {
  return row(RowState::kOutput, max_diff);
}

std::vector<Highlight> stats(const std::vector<HighlightInput>& rows) {
  return highlight_batch(CompareMode::kStatistics, rows);
}
std::vector<Highlight> tensor(const std::vector<HighlightInput>& rows) {
  return highlight_batch(CompareMode::kTensor, rows);
}

constexpr Highlight kNone = Highlight::kNone, kYellow = Highlight::kYellow, kRed = Highlight::kRed;
using H = std::vector<Highlight>;

TEST(Highlight, CleanBatchHasNoColour) {
  EXPECT_EQ(stats({in(), out()}), (H{kNone, kNone}));
  EXPECT_EQ(tensor({in(), out()}), (H{kNone, kNone}));
}

TEST(Highlight, InfOrNanMaxOrMinIsRed) {
  for (double v : {kInf, -kInf, kNan}) {
    HighlightInput o = out();
    o.npu_max_min_nan_inf = true;
    o.npu_max = !std::isnan(v);  // a NaN max is not a number; the rule fires all the same
    EXPECT_EQ(stats({in(), o}), (H{kNone, kRed})) << v;
    EXPECT_EQ(tensor({in(), o}), (H{kNone, kRed})) << v;
    // Any row, inputs too, and without an input to compare with.
    HighlightInput i = in();
    i.npu_max_min_nan_inf = true;
    EXPECT_EQ(stats({i}), (H{kRed})) << v;
  }
}

TEST(Highlight, HugeMaxDiffIsRedOnAnyRow) {
  EXPECT_EQ(stats({in(2e10)}), (H{kRed}));
  EXPECT_EQ(stats({in(), out(-2e10)}), (H{kNone, kRed}));
  EXPECT_EQ(tensor({in(), out(kInf)}), (H{kNone, kRed}));
  EXPECT_EQ(stats({in(), out(1e10)}), (H{kNone, kNone}));  // strictly greater
}

TEST(Highlight, StatisticsOutputMaxRelativeErrAboveHalfIsRed) {
  HighlightInput o = out(0.3);
  o.max_rel = 0.51;
  EXPECT_EQ(stats({in(), o}), (H{kNone, kRed}));
  o.max_rel = 0.5;  // 50 % exactly is not above: the yellow rule (input below 1 %) applies
  EXPECT_EQ(stats({in(), o}), (H{kNone, kYellow}));
  // The rule looks at outputs only.
  HighlightInput i = in(0.3);
  i.max_rel = 0.9;
  EXPECT_EQ(stats({i, out()}), (H{kNone, kNone}));
  // As msprobe: an output is judged against an input, so without a numeric input it is not.
  o.max_rel = 0.9;
  EXPECT_EQ(stats({o}), (H{kNone}));
  HighlightInput unmatched_in = in();
  unmatched_in.bench_max = false;
  EXPECT_EQ(stats({unmatched_in, o}), (H{kNone, kNone}));
}

TEST(Highlight, StatisticsOutputMaxRelativeErrYellow) {
  HighlightInput i = in(0.001), o = out(0.2);
  i.max_rel = 0.005;
  o.max_rel = 0.2;
  EXPECT_EQ(stats({i, o}), (H{kNone, kYellow}));
  i.max_rel = 0.01;  // the input must be below 1 %
  EXPECT_EQ(stats({i, o}), (H{kNone, kNone}));
  i.has_max_rel = false;  // N/A input (golden 0): no yellow
  EXPECT_EQ(stats({i, o}), (H{kNone, kNone}));
  // One calm input is enough.
  HighlightInput loud = in(0.001);
  loud.max_rel = 0.3;
  i.has_max_rel = true;
  i.max_rel = 0.001;
  EXPECT_EQ(stats({loud, i, o}), (H{kNone, kNone, kYellow}));
}

TEST(Highlight, TensorOneThousandthRedAndYellow) {
  HighlightInput i = in(), o = out();
  i.one_thousandth = 0.95;
  o.one_thousandth = 0.5;
  EXPECT_EQ(tensor({i, o}), (H{kNone, kRed}));
  o.one_thousandth = 0.6;  // not below 0.6: a drop of 0.35 is yellow
  EXPECT_EQ(tensor({i, o}), (H{kNone, kYellow}));
  i.one_thousandth = 0.9;  // input not above 0.9: red rule off, drop of 0.3 yellow
  o.one_thousandth = 0.0;
  EXPECT_EQ(tensor({i, o}), (H{kNone, kYellow}));
  i.one_thousandth = 0.65;
  o.one_thousandth = 0.6;  // drop 0.05
  EXPECT_EQ(tensor({i, o}), (H{kNone, kNone}));
  // Statistics mode has no ratio rules.
  i.one_thousandth = 1;
  o.one_thousandth = 0;
  EXPECT_EQ(stats({i, o}), (H{kNone, kNone}));
}

TEST(Highlight, TensorCosineDropIsYellow) {
  HighlightInput i = in(), o = out();
  i.cosine = 0.99;
  o.cosine = 0.85;
  EXPECT_EQ(tensor({i, o}), (H{kNone, kYellow}));
  o.cosine = 0.95;
  EXPECT_EQ(tensor({i, o}), (H{kNone, kNone}));
  o.has_cosine = false;  // NaN cosine (one side all zero) or unsupported
  o.cosine = 0.1;
  EXPECT_EQ(tensor({i, o}), (H{kNone, kNone}));
}

TEST(Highlight, MaxDiffOrderOfMagnitudeIsYellow) {
  for (CompareMode m : {CompareMode::kStatistics, CompareMode::kTensor}) {
    EXPECT_EQ(highlight_batch(m, {in(2), out(25)}), (H{kNone, kYellow}));
    EXPECT_EQ(highlight_batch(m, {in(2), out(19)}), (H{kNone, kNone}));
    // Both must exceed 1 (msprobe's current rule: an input of 0.01 does not count).
    EXPECT_EQ(highlight_batch(m, {in(0.5), out(5000)}), (H{kNone, kNone}));
    EXPECT_EQ(highlight_batch(m, {in(-3), out(-40)}), (H{kNone, kYellow}));
  }
}

TEST(Highlight, RequiresGradMismatchIsYellowOnAnyRow) {
  HighlightInput i = in();
  i.requires_grad_consistent = false;
  EXPECT_EQ(stats({i, out()}), (H{kYellow, kNone}));
  // An unmatched row: no bench values at all.
  HighlightInput lone;
  lone.state = RowState::kOutput;
  lone.npu_max = true;
  lone.requires_grad_consistent = false;
  EXPECT_EQ(tensor({lone}), (H{kYellow}));
}

TEST(Highlight, RedBeatsYellow) {
  HighlightInput i = in(2), o = out(30);  // order of magnitude: yellow
  o.max_rel = 0.8;                        // and red
  o.requires_grad_consistent = false;     // and yellow again
  EXPECT_EQ(stats({i, o}), (H{kNone, kRed}));
  HighlightInput t = out();
  t.npu_max_min_nan_inf = true;
  t.requires_grad_consistent = false;
  EXPECT_EQ(tensor({in(), t}), (H{kNone, kRed}));
}

TEST(Highlight, NonNumericRowsSkipTheComparisons) {
  HighlightInput i = in(), o = out();
  i.one_thousandth = 1;
  o.one_thousandth = 0;
  o.has_max_diff = false;  // MaxAbsErr N/A (NaN/Inf positions differ): not compared
  EXPECT_EQ(tensor({i, o}), (H{kNone, kNone}));
  o.has_max_diff = true;
  o.bench_max = false;
  EXPECT_EQ(tensor({i, o}), (H{kNone, kNone}));
}

TEST(Highlight, OnlyInputsAndParametersAreComparedWith) {
  HighlightInput p = row(RowState::kParameters), o = out(), g = row(RowState::kParametersGrad);
  p.one_thousandth = 1;
  o.one_thousandth = 0;
  EXPECT_EQ(tensor({p, o}), (H{kNone, kRed}));
  g.one_thousandth = 1;
  EXPECT_EQ(tensor({g, o}), (H{kNone, kNone}));
  // Inputs are never judged against other inputs.
  HighlightInput a = in(), b = in();
  a.one_thousandth = 1;
  b.one_thousandth = 0;
  EXPECT_EQ(tensor({a, b}), (H{kNone, kNone}));
}

TEST(Highlight, Md5ModeHasNone) {
  HighlightInput o = out();
  o.requires_grad_consistent = false;
  o.npu_max_min_nan_inf = true;
  EXPECT_EQ(highlight_batch(CompareMode::kMd5, {in(), o}), (H{kNone, kNone}));
}

TEST(Highlight, Names) {
  EXPECT_STREQ(highlight_name(kRed), "red");
  EXPECT_STREQ(highlight_name(kYellow), "yellow");
  EXPECT_STREQ(highlight_name(kNone), "");
}

}  // namespace
