#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "capture/stats_batch_host.h"
#include "core/stats.h"

namespace numprobe::capture::stats_batch {
namespace {

// Bytes of n elements of a dtype, with NaN, +-Inf and zeros where the dtype has them.
std::vector<uint8_t> sample(DType dt, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 3.f);
  const size_t w = dtype_size(dt);
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * w);
  const float specials[] = {std::nanf(""), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.f, -0.f};
  for (int64_t i = 0; i < n; ++i) {
    float f = normal(rng);
    if (i % 97 == 5) f = specials[(i / 97) % 5];
    uint8_t* p = bytes.data() + static_cast<size_t>(i) * w;
    switch (dt) {
      case DType::kF64: {
        const double d = static_cast<double>(f) * 1e3;
        std::memcpy(p, &d, w);
        break;
      }
      case DType::kF32:
        std::memcpy(p, &f, w);
        break;
      case DType::kF16: {
        const uint16_t h = float_to_half(f);
        std::memcpy(p, &h, w);
        break;
      }
      case DType::kBF16: {
        const uint16_t h = float_to_bf16(f);
        std::memcpy(p, &h, w);
        break;
      }
      case DType::kBool:
        *p = static_cast<uint8_t>(rng() % 3);  // 2 is a true byte too
        break;
      default: {  // integers: small random values, negative where signed
        const int64_t v = std::isfinite(f) ? static_cast<int64_t>(f * 20) : 0;
        std::memcpy(p, &v, w);  // little-endian: the low bytes
        break;
      }
    }
  }
  return bytes;
}

void expect_same(const TensorStats& a, const TensorStats& b, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.pos_inf_count, b.pos_inf_count);
  EXPECT_EQ(a.neg_inf_count, b.neg_inf_count);
  EXPECT_EQ(a.zero_count, b.zero_count);
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  EXPECT_TRUE(same(a.max, b.max)) << a.max << " vs " << b.max;
  EXPECT_TRUE(same(a.min, b.min)) << a.min << " vs " << b.min;
  auto close = [](double x, double y) {  // float64 sums in another order
    if (!std::isfinite(x) || !std::isfinite(y)) return (std::isnan(x) && std::isnan(y)) || x == y;
    return std::fabs(x - y) <= 1e-12 * std::max(1.0, std::fabs(x));
  };
  EXPECT_TRUE(close(a.sum, b.sum)) << a.sum << " vs " << b.sum;
  EXPECT_TRUE(close(a.sumsq, b.sumsq)) << a.sumsq << " vs " << b.sumsq;
}

TEST(StatsBatchPlan, EveryBlockBelongsToTheItemThatOwnsIt) {
  Table t;
  const int64_t sizes[] = {1, 2048, 2049, 5000000, 7};
  for (int64_t n : sizes) ASSERT_TRUE(add_item(t, nullptr, n, DType::kF32));
  EXPECT_EQ(t.blocks, 1 + 1 + 2 + kMaxItemBlocks + 1);
  for (int k = 0; k < t.count; ++k)
    for (int b = t.items[k].first_block; b < t.items[k].first_block + item_blocks(t, k); ++b)
      EXPECT_EQ(item_of_block(t, b), k) << b;
}

TEST(StatsBatchPlan, EveryElementIsReadExactlyOnce) {
  Table t;
  const int64_t sizes[] = {
      1, 255, 256, 2048, 2049, 4096 * 3 + 1, int64_t{kMaxItemBlocks} * 2048 + 3};
  for (int64_t n : sizes) ASSERT_TRUE(add_item(t, nullptr, n, DType::kF32));
  for (int k = 0; k < t.count; ++k) {
    std::vector<uint8_t> seen(static_cast<size_t>(t.items[k].n), 0);
    for (int b = t.items[k].first_block; b < t.items[k].first_block + item_blocks(t, k); ++b)
      for (int lane = 0; lane < kThreads; ++lane)
        for (int64_t i = first_element(t, k, b, lane); i < t.items[k].n; i += element_stride(t, k))
          ++seen[static_cast<size_t>(i)];
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "item " << k << " at " << i;
  }
}

TEST(StatsBatchPlan, AMixedBatchEqualsComputeStatsItemByItem) {
  const DType dtypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI8,
                          DType::kI16, DType::kI32, DType::kI64, DType::kU8,   DType::kBool};
  const int64_t sizes[] = {1, 97, 2048, 2049, 70000, int64_t{kMaxItemBlocks} * 2048 + 999};
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::pair<DType, int64_t>> what;
  Table t;
  uint32_t seed = 1;
  for (DType dt : dtypes)
    for (int64_t n : sizes) {
      if (n > 100000 && dt != DType::kF32 && dt != DType::kBF16) continue;  // keep it quick
      data.push_back(sample(dt, n, seed++));
      what.emplace_back(dt, n);
      ASSERT_TRUE(add_item(t, data.back().data(), n, dt));
    }
  std::vector<double> out(static_cast<size_t>(t.count) * kFields);
  run_on_host(t, out.data());
  for (int k = 0; k < t.count; ++k) {
    StatsOptions one;
    one.threads = 1;
    const TensorStats want = compute_stats(data[static_cast<size_t>(k)].data(),
                                           static_cast<size_t>(what[static_cast<size_t>(k)].second),
                                           what[static_cast<size_t>(k)].first, one);
    const std::string name = std::string(dtype_name(what[static_cast<size_t>(k)].first)) + " x " +
                             std::to_string(what[static_cast<size_t>(k)].second);
    expect_same(stats_of_fields(out.data() + k * kFields, want.count), want, name.c_str());
  }
}

TEST(StatsBatchPlan, AllNanItemsHaveNanExtremaAndATableRefusesItsNinetySeventhItem) {
  const float nan = std::nanf("");
  const std::vector<float> all_nan(3000, nan);
  Table t;
  ASSERT_TRUE(add_item(t, all_nan.data(), 3000, DType::kF32));
  std::vector<double> out(kFields);
  run_on_host(t, out.data());
  const TensorStats s = stats_of_fields(out.data(), 3000);
  EXPECT_TRUE(std::isnan(s.max) && std::isnan(s.min) && std::isnan(s.sum));
  EXPECT_EQ(s.nan_count, 3000u);
  for (int k = 1; k < kMaxItems; ++k) ASSERT_TRUE(add_item(t, all_nan.data(), 1, DType::kF32));
  const Table before = t;
  EXPECT_FALSE(add_item(t, all_nan.data(), 1, DType::kF32));
  EXPECT_EQ(t.count, before.count);
  EXPECT_EQ(t.blocks, before.blocks);
}

}  // namespace
}  // namespace numprobe::capture::stats_batch
