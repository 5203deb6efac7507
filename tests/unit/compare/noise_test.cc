#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compare/noise.h"

namespace numprobe {
namespace {

StatValue num(double v) {
  StatValue s;
  s.kind = StatKind::kFloat;
  s.v = v;
  return s;
}

CompareRow tensor_row(double mx, double mn, double mean, double norm, std::vector<int64_t> shape) {
  CompareRow r;
  r.kind = RowKind::kTensor;
  r.element_type = DType::kF32;
  static RowText text;  // rows point into it; it lives as long as the test program
  r.shape = text.add(shape.data(), shape.size());
  r.has_shape = true;
  r.max = num(mx);
  r.min = num(mn);
  r.mean = num(mean);
  r.norm = num(norm);
  return r;
}

TEST(Noise, IdenticalRowsHaveNoDiscrepancy) {
  auto a = tensor_row(2, -1, 0.1, 10, {4, 25});
  EXPECT_EQ(row_discrepancy(a, a), 0);
}

TEST(Noise, MeanIsJudgedAgainstRmsNotAgainstItself) {
  // Mean ~0: a 1e-6 change is huge relative to the mean but nothing relative to the RMS (1.0).
  auto a = tensor_row(3, -3, 1e-7, 10, {100});
  auto b = tensor_row(3, -3, 1.1e-6, 10, {100});
  EXPECT_NEAR(row_discrepancy(a, b), 1e-6, 1e-9);
}

TEST(Noise, MaxAndNormAreScaled) {
  auto a = tensor_row(2, -1, 0, 10, {4});
  auto b = tensor_row(2.1, -1, 0, 10, {4});
  EXPECT_NEAR(row_discrepancy(a, b), 0.1 / 2.1, 1e-12);
  auto c = tensor_row(2, -1, 0, 10.5, {4});
  EXPECT_NEAR(row_discrepancy(a, c), 0.5 / 10.5, 1e-12);
}

// msprobe sums fp32 tensors in fp32 (its Mean and Norm are float32 values), numprobe in float64:
// on a 55,296-element weight the two Norms of one tensor differ by ~6e-7 relative (ResNet's
// conv weights, msprobe 26 on torch 2.14). That much is allowed between an fp32 and a float64 sum,
// not between two float64 sums.
TEST(Noise, Fp32SumsAgainstFloat64SumsAllowTheFp32SumsError) {
  const std::vector<int64_t> shape = {96, 576, 1, 1};
  const double norm64 = 34.15684290123456789;
  const double norm32 = static_cast<float>(norm64 * (1 + 6e-7));
  const double mean32 = static_cast<float>(-0.000366444209);
  auto numprobe_row = tensor_row(0.61, -0.59, -0.000366444209145983, norm64, shape);
  auto msprobe_row = tensor_row(0.61, -0.59, mean32, norm32, shape);
  EXPECT_EQ(row_discrepancy(numprobe_row, msprobe_row), 0);
  auto other_float64 = tensor_row(0.61, -0.59, -0.000366444209145983, norm64 * (1 + 6e-7), shape);
  EXPECT_GT(row_discrepancy(numprobe_row, other_float64), 5e-7);
}

// msprobe 26 writes a 0-d tensor's Norm as its value, sign kept; numprobe writes |value|.
TEST(Noise, AOneElementTensorsNormIsComparedByMagnitude) {
  auto msprobe_row = tensor_row(-45.25, -45.25, -45.25, -45.25, {});
  auto numprobe_row = tensor_row(-45.25, -45.25, -45.25, 45.25, {});
  EXPECT_EQ(row_discrepancy(numprobe_row, msprobe_row), 0);
  // Over more elements a Norm of the other sign is a difference (no norm is negative).
  EXPECT_GT(row_discrepancy(tensor_row(2, -1, 0, 10, {4}), tensor_row(2, -1, 0, -10, {4})), 1);
  // The parts: extremes and sums apart.
  const RowDiscrepancy parts = row_discrepancy_parts(tensor_row(2, -1, 0, 10 * (1 + 1e-6), {4}),
                                                     tensor_row(2, -1, 0, 10, {4}));
  EXPECT_EQ(parts.extremes, 0);
  EXPECT_NEAR(parts.sums, 1e-6, 1e-9);
}

TEST(Noise, ShapeKindScalarAndNonFiniteMismatchesAreInfinite) {
  const double inf = std::numeric_limits<double>::infinity();
  auto a = tensor_row(2, -1, 0, 10, {4});
  EXPECT_EQ(row_discrepancy(a, tensor_row(2, -1, 0, 10, {2, 2})), inf);
  EXPECT_EQ(row_discrepancy(a, tensor_row(inf, -1, inf, inf, {4})), inf);
  EXPECT_EQ(
      row_discrepancy(tensor_row(NAN, NAN, NAN, NAN, {4}), tensor_row(NAN, NAN, NAN, NAN, {4})), 0);
  CompareRow s1, s2;
  s1.kind = s2.kind = RowKind::kScalar;
  s1.md5 = "1";
  s2.md5 = "2";
  EXPECT_EQ(row_discrepancy(s1, s2), inf);
  s2.md5 = "1";
  EXPECT_EQ(row_discrepancy(s1, s2), 0);
  CompareRow none;
  EXPECT_EQ(row_discrepancy(a, none), inf);
  // A string argument against an object the other framework's dumper wrote as null: no evidence.
  CompareRow text;
  text.kind = RowKind::kOther;
  text.md5 = "1";
  EXPECT_EQ(row_discrepancy(text, none), 0);
  EXPECT_EQ(row_discrepancy(none, s1), 0);
}

TEST(Noise, ToleranceIsTf32FloorOrEightUlps) {
  EXPECT_EQ(noise_tolerance(DType::kF32), std::ldexp(1.0, -10));
  EXPECT_EQ(noise_tolerance(DType::kF64), std::ldexp(1.0, -10));
  EXPECT_EQ(noise_tolerance(DType::kF16), 8 * std::ldexp(1.0, -10));
  EXPECT_EQ(noise_tolerance(DType::kBF16), 8 * std::ldexp(1.0, -7));
  EXPECT_EQ(noise_tolerance(DType::kI64), std::ldexp(1.0, -10));
}

}  // namespace
}  // namespace numprobe
