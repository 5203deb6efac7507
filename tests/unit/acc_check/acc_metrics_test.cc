#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "acc_check/acc_check_internal.h"
#include "numprobe/acc_check.h"

namespace numprobe {
namespace {

AccColumns run(std::string_view op, const std::vector<double>& bench,
               const std::vector<double>& dev, const char* bench_dtype = "torch.float64",
               const char* dev_dtype = "torch.float32") {
  return acc_compare_output(op, AccTensorView{bench.data(), bench.size(), bench_dtype},
                            AccTensorView{dev.data(), dev.size(), dev_dtype}, "(4,)");
}

std::vector<double> ramp(size_t n, double scale) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i) + 0.1);
  return v;
}

std::vector<double> rounded_to_float(const std::vector<double>& v) {
  std::vector<double> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = static_cast<float>(v[i]);
  return r;
}

TEST(AccStandards, TablesAreSortedAndClassifyLikeMsprobe) {
  EXPECT_TRUE(acc_standard_tables_sorted());
  EXPECT_EQ(acc_standard_for("gelu"), AccStandard::kBenchmark);
  EXPECT_EQ(acc_standard_for("__mul__"), AccStandard::kAbsoluteThreshold);
  EXPECT_EQ(acc_standard_for("rsub"), AccStandard::kAbsoluteThreshold);
  EXPECT_EQ(acc_standard_for("relu"), AccStandard::kBinary);
  EXPECT_EQ(acc_standard_for("type_as"), AccStandard::kBinary);
  EXPECT_EQ(acc_standard_for("addmm.default"), AccStandard::kUlp);
  EXPECT_EQ(acc_standard_for("__matmul__"), AccStandard::kUlp);
  EXPECT_EQ(acc_standard_for("conv2d"), AccStandard::kThousandth);
  EXPECT_EQ(acc_standard_for("conv3d"), AccStandard::kBenchmark);
}

TEST(AccMetrics, CorrectlyRoundedFloat32OutputPasses) {
  const auto bench = ramp(1000, 3.0);
  const AccColumns c = run("gelu", bench, rounded_to_float(bench));
  EXPECT_EQ(c.status, AccStatus::kPass) << c.message;
  ASSERT_TRUE(c.cosine);
  EXPECT_NEAR(*c.cosine, 1.0, 1e-12);
  ASSERT_TRUE(c.max_abs_err);
  EXPECT_LE(*c.max_abs_err, 3.0 * 6e-8);
  ASSERT_TRUE(c.rel_l2);
  EXPECT_LT(*c.rel_l2, 1e-7);
  // Benchmark standard metrics are filled for float32, the ULP ones are not.
  EXPECT_TRUE(c.rmse && c.eb && c.max_rel_err && c.mean_rel_err && c.small_value_err_ratio);
  EXPECT_FALSE(c.max_ulp_error);
}

// An approximation off by 1e-4 relative passes msprobe's single-run cascade (max abs err < 1e-3)
// but not numprobe's dtype-scaled bound: the tanh-gelu case of the issue.
TEST(AccMetrics, SmallSystematicErrorIsAnErrorThroughRelativeL2) {
  const auto bench = ramp(1000, 1.0);
  std::vector<double> dev(bench.size());
  for (size_t i = 0; i < dev.size(); ++i) dev[i] = static_cast<float>(bench[i] * (1 + 1e-4));
  const AccColumns c = run("gelu", bench, dev);
  EXPECT_EQ(c.status, AccStatus::kError);
  EXPECT_NE(c.message.find("Max abs error is less than 0.001"), std::string::npos);
  EXPECT_NE(c.message.find("relative L2 error"), std::string::npos);
}

TEST(AccMetrics, MsprobeCascadeThousandthFailureIsError) {
  const auto bench = ramp(1000, 10.0);
  std::vector<double> dev = rounded_to_float(bench);
  for (size_t i = 0; i < dev.size(); i += 50) dev[i] += 0.5;  // 2% of elements far off
  const AccColumns c = run("exp", bench, dev);
  EXPECT_EQ(c.status, AccStatus::kError);
  ASSERT_TRUE(c.rel_err_thousandth);
  EXPECT_LT(*c.rel_err_thousandth, 0.999);
}

TEST(AccMetrics, IntegerOutputsAreJudgedByErrorRate) {
  const std::vector<double> bench = {1, 2, 3, 4}, dev = {1, 2, 0, 4};
  const AccColumns c = run("argmax", bench, dev, "torch.int64", "torch.int64");
  EXPECT_EQ(c.status, AccStatus::kError);
  ASSERT_TRUE(c.error_rate);
  EXPECT_DOUBLE_EQ(*c.error_rate, 0.25);
  EXPECT_FALSE(c.cosine);
  EXPECT_EQ(run("argmax", bench, bench, "torch.int64", "torch.int64").status, AccStatus::kPass);
}

TEST(AccMetrics, AbsoluteThresholdCountsNormalAndSmallValues) {
  std::vector<double> bench = ramp(100, 2.0);
  bench[0] = 1e-8;  // a small value for float32 (<= 1e-6)
  std::vector<double> dev = rounded_to_float(bench);
  AccColumns ok = run("__mul__", bench, dev);
  EXPECT_EQ(ok.status, AccStatus::kPass) << ok.message;
  EXPECT_DOUBLE_EQ(ok.rel_err_ratio.value(), 0.0);
  EXPECT_DOUBLE_EQ(ok.abs_err_ratio.value(), 0.0);

  dev[5] = bench[5] * (1 + 1e-5);  // a normal value beyond rtol 1e-6
  dev[0] = 1e-8 + 1e-8;            // a small value beyond atol 1e-9
  // msprobe's element-wise rule fails; a single element off by 1e-5 keeps the relative L2 error
  // within float32 noise, so numprobe warns instead of calling the API wrong.
  const AccColumns bad = run("__mul__", bench, dev);
  EXPECT_EQ(bad.status, AccStatus::kWarning) << bad.message;
  EXPECT_NE(bad.message.find("absolute_threshold standard"), std::string::npos);
  EXPECT_DOUBLE_EQ(bad.rel_err_ratio.value(), 1.0 / 99);
  EXPECT_DOUBLE_EQ(bad.abs_err_ratio.value(), 1.0);
}

TEST(AccMetrics, UlpErrorOfFloat32IsMeasuredAgainstTheBenchExponent) {
  const std::vector<double> bench = {1.0, 2.0, 0.75, -3.0};
  std::vector<double> dev = bench;
  dev[1] = 2.0 + 3 * std::ldexp(1.0, -22);  // 3 ulp at exponent 1
  const AccColumns c = run("matmul", bench, dev);
  EXPECT_DOUBLE_EQ(c.max_ulp_error.value(), 3.0);
  EXPECT_DOUBLE_EQ(c.mean_ulp_error.value(), 0.75);
  EXPECT_DOUBLE_EQ(c.ulp_error_proportion.value(), 0.0);
  EXPECT_EQ(c.status, AccStatus::kPass);
}

TEST(AccMetrics, BenchmarkMetricsFollowMsprobeDefinitions) {
  // float16 device, float32 bench: eps of the bench dtype (2^-23), small values |b| <= 1e-3.
  const std::vector<double> bench = {1.0, 1.0, 9.0, 1e-4};
  const std::vector<double> dev = {5.0, 2.0, 1.0, 1e-4 + 1e-3};
  const AccColumns c = run("gelu", bench, dev, "torch.float32", "torch.float16");
  const double eps = std::ldexp(1.0, -23);
  EXPECT_NEAR(c.max_rel_err.value(), 4.0 / (1 + eps), 1e-12);
  EXPECT_NEAR(c.mean_rel_err.value(), (4.0 / (1 + eps) + 1.0 / (1 + eps) + 8.0 / (9 + eps)) / 3,
              1e-12);
  EXPECT_DOUBLE_EQ(c.small_value_err_ratio.value(), 1.0);
  // masked RMSE: squares of the 3 normal errors over all 4, rescaled for the masked one
  const double mse = (16.0 + 1 + 64) / 4 * (4 / (3 + 0.0001) + 0.0001);
  EXPECT_NEAR(c.rmse.value(), std::sqrt(mse), 1e-9);
  // two elements above the bench, one below; the small one rounds above too in float16
  EXPECT_DOUBLE_EQ(c.eb.value(), std::fabs(3.0 - 1.0) / 4);
  EXPECT_EQ(c.status, AccStatus::kError);
}

TEST(AccMetrics, ZeroBenchAndScalarAndMismatchMessages) {
  const std::vector<double> zeros(8, 0.0), ones(8, 1.0);
  const AccColumns z = run("gelu", zeros, ones);
  EXPECT_EQ(z.status, AccStatus::kError);
  EXPECT_NE(z.message.find("All the data is zero in bench dump data."), std::string::npos);
  const AccColumns s = run("sum", {2.0}, {2.0});
  EXPECT_FALSE(s.cosine);
  EXPECT_EQ(s.status, AccStatus::kPass);
  const AccColumns m = run("gelu", {1.0, 2.0}, {1.0});
  EXPECT_EQ(m.status, AccStatus::kError);
  const AccColumns t = run("gelu", {1.0, 2.0}, {1.0, 0.0}, "torch.float64", "torch.bool");
  EXPECT_EQ(t.status, AccStatus::kError);
  EXPECT_NE(t.message.find("cannot compare"), std::string::npos);
}

TEST(AccMetrics, BinaryStandardMismatchIsAnError) {
  const auto bench = ramp(64, 1.0);
  std::vector<double> exact = rounded_to_float(bench);
  EXPECT_EQ(run("relu", exact, exact).status, AccStatus::kPass);
  exact[3] = std::nextafter(static_cast<float>(exact[3]), 2.0f);
  const AccColumns c = run("relu", rounded_to_float(bench), exact);
  EXPECT_EQ(c.status, AccStatus::kError);
  EXPECT_DOUBLE_EQ(c.error_rate.value(), 1.0 / 64);
}

TEST(AccMetrics, AgreeingInfAndNanAreLeftOutDisagreeingOnesAreErrors) {
  std::vector<double> bench = ramp(32, 1.0);
  bench[4] = -HUGE_VAL;
  bench[9] = std::nan("");
  std::vector<double> dev = rounded_to_float(bench);
  const AccColumns same = run("log", bench, dev);
  EXPECT_EQ(same.status, AccStatus::kPass) << same.message;
  EXPECT_NE(same.message.find("2 inf/nan elements"), std::string::npos);
  dev[4] = 0.0;
  EXPECT_EQ(run("log", bench, dev).status, AccStatus::kError);
}

TEST(AccMetrics, NumbersAreFormattedLikeMsprobe) {
  EXPECT_EQ(acc_format_number(0.5), "0.50000000000000");
  EXPECT_EQ(acc_format_number(std::nullopt), " ");
  EXPECT_EQ(acc_format_number(std::nan("")), "nan");
  EXPECT_EQ(acc_format_number(-HUGE_VAL), "-inf");
  EXPECT_EQ(acc_worse(AccStatus::kPass, AccStatus::kError), AccStatus::kError);
  EXPECT_EQ(acc_worse(AccStatus::kSkip, AccStatus::kPass), AccStatus::kPass);
  EXPECT_EQ(acc_worse(AccStatus::kWarning, AccStatus::kNone), AccStatus::kWarning);
}

}  // namespace
}  // namespace numprobe
