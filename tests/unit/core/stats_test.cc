#include "core/stats.h"

#include "core/hash.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "numprobe/dtype.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A tensor in a byte buffer that starts `misalign` bytes past an allocation, plus each element's
// value decoded independently of the code under test.
struct Sample {
  std::vector<uint8_t> storage;
  size_t misalign = 0;
  std::vector<long double> values;
  const void* data() const { return storage.data() + misalign; }
  size_t size() const { return values.size(); }
};

template <typename T>
void append(Sample& s, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.storage.insert(s.storage.end(), b, b + sizeof(T));
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  // special_rate: probability of NaN/Inf/zero/subnormal/extreme codes; other elements are finite.
  Sample make(DType t, size_t n, size_t misalign, double special_rate) {
    Sample s;
    s.misalign = misalign;
    s.storage.assign(misalign, 0xAB);
    for (size_t i = 0; i < n; ++i) add(s, t, coin(special_rate));
    return s;
  }

  void add(Sample& s, DType t, bool special) {
    switch (t) {
      case DType::kF64: {
        const double v =
            special ? pick<double>({kNaN, kInf, -kInf, 0.0, -0.0, 4.9e-324, -1e-310, -kNaN, 1e150})
                    : std::ldexp(uniform(), int_in(-60, 60));
        append(s, v);
        s.values.push_back(v);
        break;
      }
      case DType::kF32: {
        const float fmax = std::numeric_limits<float>::max();
        float v;
        if (special) {
          v = pick<float>({static_cast<float>(kNaN), static_cast<float>(kInf),
                           static_cast<float>(-kInf), 0.0f, -0.0f, 1e-45f, -3e-39f, fmax, -fmax});
        } else {
          v = static_cast<float>(std::ldexp(uniform(), int_in(-40, 40)));
        }
        append(s, v);
        s.values.push_back(v);
        break;
      }
      case DType::kF16:
      case DType::kBF16: {
        const bool half = t == DType::kF16;
        const uint16_t exp_mask = half ? 0x7C00 : 0x7F80;
        uint16_t code;
        if (special) {
          code = half ? pick<uint16_t>({0x7C00, 0xFC00, 0x7E00, 0xFD01, 0x0000, 0x8000, 0x0001,
                                        0x83FF, 0x7BFF, 0xFBFF})
                      : pick<uint16_t>({0x7F80, 0xFF80, 0x7FC0, 0xFF81, 0x0000, 0x8000, 0x0001,
                                        0x807F, 0x7F7F, 0xFF7F});
        } else {
          do code = static_cast<uint16_t>(rng_());
          while ((code & exp_mask) == exp_mask);
        }
        append(s, code);
        s.values.push_back(half ? ref_half(code) : ref_bf16(code));
        break;
      }
      case DType::kF8E4M3FN:
      case DType::kF8E5M2: {
        const bool e4 = t == DType::kF8E4M3FN;
        uint8_t code;
        if (special) {
          code = e4 ? pick<uint8_t>({0x7F, 0xFF, 0x00, 0x80, 0x01, 0x7E, 0xFE})
                    : pick<uint8_t>({0x7C, 0xFC, 0x7D, 0xFF, 0x00, 0x80, 0x01, 0x7B});
        } else {
          do code = static_cast<uint8_t>(rng_());
          while (e4 ? (code & 0x7F) == 0x7F : (code & 0x7C) == 0x7C);
        }
        append(s, code);
        s.values.push_back(e4 ? ref_fp8(code, 4, 3, false) : ref_fp8(code, 5, 2, true));
        break;
      }
      case DType::kI8:
        add_int<int8_t>(s, special);
        break;
      case DType::kI16:
        add_int<int16_t>(s, special);
        break;
      case DType::kI32:
        add_int<int32_t>(s, special);
        break;
      case DType::kI64:
        add_int<int64_t>(s, special);
        break;
      case DType::kU8:
        add_int<uint8_t>(s, special);
        break;
      case DType::kBool: {
        // Any non-zero byte counts as true.
        const auto b = static_cast<uint8_t>(special ? pick<uint8_t>({2, 255, 0}) : rng_() % 2);
        append(s, b);
        s.values.push_back(b != 0);
        break;
      }
      case DType::kUnknown:
        break;
    }
  }

  static long double ref_fp8(uint8_t b, int eb, int mb, bool ieee) {
    const int sign = b >> 7, exp = (b >> mb) & ((1 << eb) - 1), mant = b & ((1 << mb) - 1);
    const int bias = (1 << (eb - 1)) - 1;
    long double mag;
    if (ieee && exp == (1 << eb) - 1) {
      mag = mant ? kNaN : kInf;
    } else if (!ieee && exp == (1 << eb) - 1 && mant == (1 << mb) - 1) {
      mag = kNaN;
    } else if (exp == 0) {
      mag = std::ldexp(static_cast<long double>(mant), 1 - bias - mb);
    } else {
      mag = std::ldexp(static_cast<long double>((1 << mb) + mant), exp - bias - mb);
    }
    return sign ? -mag : mag;
  }
  static long double ref_half(uint16_t b) {
    const int e = (b >> 10) & 31, m = b & 1023;
    const long double mag = e == 31  ? (m ? kNaN : kInf)
                            : e == 0 ? std::ldexp(static_cast<long double>(m), -24)
                                     : std::ldexp(static_cast<long double>(1024 + m), e - 25);
    return (b & 0x8000) ? -mag : mag;
  }
  static long double ref_bf16(uint16_t b) {
    const int e = (b >> 7) & 255, m = b & 127;
    const long double mag = e == 255 ? (m ? kNaN : kInf)
                            : e == 0 ? std::ldexp(static_cast<long double>(m), -133)
                                     : std::ldexp(static_cast<long double>(128 + m), e - 134);
    return (b & 0x8000) ? -mag : mag;
  }

 private:
  template <typename T>
  void add_int(Sample& s, bool special) {
    T v;
    if (special) {
      v = pick<T>({std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T{0}});
    } else {
      const uint64_t r = rng_();
      std::memcpy(&v, &r, sizeof(T));
    }
    append(s, v);
    s.values.push_back(static_cast<long double>(v));
  }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  double uniform() { return std::uniform_real_distribution<double>(-1, 1)(rng_); }
  int int_in(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  T pick(std::initializer_list<T> options) {
    return options.begin()[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng_)];
  }

  std::mt19937_64 rng_;
};

struct Reference {
  TensorStats stats;
  long double abs_sum = 0;  // scale for the summation tolerance
};

Reference reference_stats(const std::vector<long double>& values) {
  Reference r;
  TensorStats& s = r.stats;
  long double sum = 0, sumsq = 0;
  long double lo = kInf, hi = -kInf;
  for (long double v : values) {
    ++s.count;
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    if (std::isinf(v)) {
      ++(v > 0 ? s.pos_inf_count : s.neg_inf_count);
      continue;
    }
    if (v == 0) ++s.zero_count;
    sum += v;
    sumsq += v * v;
    r.abs_sum += std::fabs(v);
  }
  const bool any = s.count > s.nan_count;
  s.min = any ? static_cast<double>(lo) : kNaN;
  s.max = any ? static_cast<double>(hi) : kNaN;
  s.sum = static_cast<double>(sum);
  s.sumsq = static_cast<double>(sumsq);
  if (s.pos_inf_count) s.sum += kInf;
  if (s.neg_inf_count) s.sum -= kInf;
  if (s.pos_inf_count || s.neg_inf_count) s.sumsq = kInf;
  if (s.nan_count) s.sum = s.sumsq = kNaN;
  return r;
}

void expect_same_double(double want, double got, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": want NaN, got " << got;
  } else {
    EXPECT_EQ(want, got) << what;
  }
}

void expect_close(double want, double got, double scale, const std::string& what) {
  if (!std::isfinite(want)) return expect_same_double(want, got, what);
  EXPECT_LE(std::fabs(want - got), 1e-12 * scale + 1e-300)
      << what << ": want " << want << ", got " << got;
}

// Counts, min and max exactly; sums within 1e-12 of the sum of magnitudes.
void expect_stats(const TensorStats& want, double abs_sum, const TensorStats& got,
                  const std::string& what) {
  EXPECT_EQ(want.count, got.count) << what;
  EXPECT_EQ(want.nan_count, got.nan_count) << what;
  EXPECT_EQ(want.pos_inf_count, got.pos_inf_count) << what;
  EXPECT_EQ(want.neg_inf_count, got.neg_inf_count) << what;
  EXPECT_EQ(want.zero_count, got.zero_count) << what;
  expect_same_double(want.min, got.min, what + " min");
  expect_same_double(want.max, got.max, what + " max");
  expect_close(want.sum, got.sum, abs_sum, what + " sum");
  expect_close(want.sumsq, got.sumsq, std::fabs(want.sumsq), what + " sumsq");
}

constexpr DType kAllTypes[] = {DType::kF64,      DType::kF32,    DType::kF16, DType::kBF16,
                               DType::kF8E4M3FN, DType::kF8E5M2, DType::kI8,  DType::kI16,
                               DType::kI32,      DType::kI64,    DType::kU8,  DType::kBool};

// Compares compute_stats with the reference over a matrix of lengths (vector tails, block edges),
// start misalignments and densities of special values. Returns false after the first failure.
bool check_against_reference(uint64_t seed, const std::vector<size_t>& lengths,
                             const std::string& label) {
  Generator gen(seed);
  StatsOptions single;
  single.threads = 1;
  for (DType t : kAllTypes) {
    for (size_t n : lengths) {
      for (size_t misalign : {0, 1, 3}) {
        for (double rate : {0.0, 0.002, 0.3}) {
          const Sample s = gen.make(t, n, misalign, rate);
          const Reference ref = reference_stats(s.values);
          const std::string what =
              label + " " + std::string(dtype_name(t)) + " n=" + std::to_string(n) +
              " misalign=" + std::to_string(misalign) + " rate=" + std::to_string(rate);
          expect_stats(ref.stats, static_cast<double>(ref.abs_sum),
                       compute_stats(s.data(), n, t, single), what);
          if (::testing::Test::HasFailure()) return false;
        }
      }
    }
  }
  return true;
}

TEST(Stats, MatchesLongDoubleReferenceForEveryDtype) {
  check_against_reference(
      12345, {1, 2, 3, 15, 16, 17, 31, 33, 64, 255, 1000, 4095, 4097, 8193, 20001, 40001}, "");
}

// Runs the same checks once per SIMD target compiled in and supported here (e.g. AVX2, SSE4,
// SSSE3 and the scalar fallback), not only the one dynamic dispatch picks.
TEST(Stats, EverySupportedSimdTargetMatchesReference) {
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  EXPECT_GE(targets.size(), 2u);
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    (void)hwy::SupportedTargets();  // makes dispatch pick `target`
    const bool ok = check_against_reference(static_cast<uint64_t>(target),
                                            {1, 7, 33, 100, 4097, 9000}, hwy::TargetName(target));
    hwy::SetSupportedTargetsForTest(0);
    (void)hwy::SupportedTargets();
    if (!ok) break;
  }
}

TEST(Stats, NonFiniteBlocksFollowedByCleanOnes) {
  // Exercises the switch from the careful loop back to the fast one and the reverse.
  StatsOptions single;
  single.threads = 1;
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kF8E5M2}) {
    Generator gen(7);
    Sample s = gen.make(t, 0, 0, 0);
    for (size_t i = 0; i < 200000; ++i) {
      const bool special = (i < 30000 && i % 97 == 0) || (i > 150000 && i < 150100);
      gen.add(s, t, special);
    }
    const Reference ref = reference_stats(s.values);
    expect_stats(ref.stats, static_cast<double>(ref.abs_sum),
                 compute_stats(s.data(), s.size(), t, single), std::string(dtype_name(t)));
  }
}

TEST(Stats, MultiThreadedMatchesSingleThreaded) {
  Generator gen(99);
  for (DType t : kAllTypes) {
    for (double rate : {0.0, 0.0001}) {
      const Sample s = gen.make(t, 200003, 1, rate);
      StatsOptions single;
      single.threads = 1;
      const TensorStats one = compute_stats(s.data(), s.size(), t, single);
      const Reference ref = reference_stats(s.values);
      expect_stats(ref.stats, static_cast<double>(ref.abs_sum), one, "single");
      for (int threads : {0, 2, 3, 7}) {
        StatsOptions multi;
        multi.threads = threads;
        multi.parallel_threshold = 1000;
        const TensorStats many = compute_stats(s.data(), s.size(), t, multi);
        const std::string what = std::string(dtype_name(t)) +
                                 " threads=" + std::to_string(threads) +
                                 " rate=" + std::to_string(rate);
        EXPECT_EQ(one.count, many.count) << what;
        EXPECT_EQ(one.nan_count, many.nan_count) << what;
        EXPECT_EQ(one.pos_inf_count, many.pos_inf_count) << what;
        EXPECT_EQ(one.neg_inf_count, many.neg_inf_count) << what;
        EXPECT_EQ(one.zero_count, many.zero_count) << what;
        expect_same_double(one.min, many.min, what);
        expect_same_double(one.max, many.max, what);
        expect_close(one.sum, many.sum, static_cast<double>(ref.abs_sum), what + " sum");
        expect_close(one.sumsq, many.sumsq, std::fabs(one.sumsq), what + " sumsq");
      }
    }
  }
}

TEST(Stats, SmallInputsStaySingleThreadedButAgree) {
  std::vector<float> v(5000, 1.5f);
  StatsOptions multi;
  multi.threads = 4;  // below the default threshold: runs inline
  const TensorStats s = compute_stats(v.data(), v.size(), DType::kF32, multi);
  EXPECT_EQ(s.sum, 7500.0);
  EXPECT_EQ(s.sumsq, 11250.0);
}

TEST(Stats, Empty) {
  for (DType t : kAllTypes) {
    const TensorStats s = compute_stats(nullptr, 0, t);
    EXPECT_EQ(s.count, 0u);
    EXPECT_TRUE(std::isnan(s.min));
    EXPECT_TRUE(std::isnan(s.max));
    EXPECT_EQ(s.sum, 0.0);
    EXPECT_EQ(s.sumsq, 0.0);
    EXPECT_TRUE(std::isnan(s.mean()));
    EXPECT_EQ(s.norm(), 0.0);
  }
}

TEST(Stats, AllNaN) {
  std::vector<float> v(10007, std::numeric_limits<float>::quiet_NaN());
  const TensorStats s = compute_stats(v.data(), v.size(), DType::kF32);
  EXPECT_EQ(s.count, v.size());
  EXPECT_EQ(s.nan_count, v.size());
  EXPECT_TRUE(std::isnan(s.min));
  EXPECT_TRUE(std::isnan(s.max));
  EXPECT_TRUE(std::isnan(s.sum));
  EXPECT_TRUE(std::isnan(s.sumsq));
  EXPECT_TRUE(std::isnan(s.mean()));
  std::vector<uint16_t> h(333, 0x7E00);
  const TensorStats hs = compute_stats(h.data(), h.size(), DType::kF16);
  EXPECT_EQ(hs.nan_count, h.size());
  EXPECT_TRUE(std::isnan(hs.min));
}

TEST(Stats, InfinitiesFollowIeeeRules) {
  std::vector<float> v(1000, 2.0f);
  v[10] = std::numeric_limits<float>::infinity();
  TensorStats s = compute_stats(v.data(), v.size(), DType::kF32);
  EXPECT_EQ(s.sum, kInf);
  EXPECT_EQ(s.sumsq, kInf);
  EXPECT_EQ(s.max, kInf);
  EXPECT_EQ(s.min, 2.0);
  EXPECT_EQ(s.pos_inf_count, 1u);
  v[500] = -std::numeric_limits<float>::infinity();
  s = compute_stats(v.data(), v.size(), DType::kF32);
  EXPECT_TRUE(std::isnan(s.sum));
  EXPECT_EQ(s.sumsq, kInf);
  EXPECT_EQ(s.min, -kInf);
  EXPECT_EQ(s.neg_inf_count, 1u);
  EXPECT_EQ(s.nan_count, 0u);
}

TEST(Stats, Float64OverflowGivesInfinity) {
  std::vector<double> v(100, 1e200);
  const TensorStats s = compute_stats(v.data(), v.size(), DType::kF64);
  EXPECT_EQ(s.sumsq, kInf);
  EXPECT_DOUBLE_EQ(s.sum, 1e202);
  EXPECT_EQ(s.pos_inf_count, 0u);
  std::vector<double> big(64, std::numeric_limits<double>::max());
  EXPECT_EQ(compute_stats(big.data(), big.size(), DType::kF64).sum, kInf);
}

TEST(Stats, AccumulatesInFloat64) {
  // In float32, 2^24 + 1 == 2^24: every one would be lost.
  std::vector<float> v(10001, 1.0f);
  v[0] = 16777216.0f;
  const TensorStats s = compute_stats(v.data(), v.size(), DType::kF32);
  EXPECT_EQ(s.sum, 16777216.0 + 10000.0);
  std::vector<uint16_t> b(70000, 0x3F80);  // bf16 1.0
  EXPECT_EQ(compute_stats(b.data(), b.size(), DType::kBF16).sum, 70000.0);
}

TEST(Stats, MeanAndNorm) {
  const float v[] = {3.0f, -4.0f, 0.0f, 1.0f};
  const TensorStats s = compute_stats(v, 4, DType::kF32);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.zero_count, 1u);
  EXPECT_EQ(s.min, -4.0);
  EXPECT_EQ(s.max, 3.0);
  EXPECT_EQ(s.mean(), 0.0);
  EXPECT_EQ(s.norm(), std::sqrt(26.0));
}

TEST(Stats, IntegersAreExact) {
  std::vector<int64_t> v = {std::numeric_limits<int64_t>::min(), -1, 0, 1, 42};
  const TensorStats s = compute_stats(v.data(), v.size(), DType::kI64);
  EXPECT_EQ(s.min, -9223372036854775808.0);
  EXPECT_EQ(s.max, 42.0);
  EXPECT_EQ(s.zero_count, 1u);
  std::vector<int16_t> w(100000, -32768);
  const TensorStats ws = compute_stats(w.data(), w.size(), DType::kI16);
  EXPECT_EQ(ws.sum, -3276800000.0);
  EXPECT_EQ(ws.sumsq, 107374182400000.0);
  const uint8_t flags[] = {0, 1, 2, 0, 255};
  const TensorStats bs = compute_stats(flags, 5, DType::kBool);
  EXPECT_EQ(bs.sum, 3.0);
  EXPECT_EQ(bs.max, 1.0);
  EXPECT_EQ(bs.zero_count, 2u);
}

TEST(Stats, RejectsUnknownDtypeAndNullData) {
  const float v[] = {1.0f};
  EXPECT_THROW(compute_stats(v, 1, DType::kUnknown), Error);
  EXPECT_THROW(compute_stats(v, 0, DType::kUnknown), Error);
  EXPECT_THROW(compute_stats(v, 1, static_cast<DType>(99)), Error);
  EXPECT_THROW(compute_stats(nullptr, 1, DType::kF32), Error);
}

}  // namespace
}  // namespace numprobe

namespace numprobe {
namespace {

// StatsOptions::crc32: the statistics are those of the pass without it, bit for bit (the same
// blocks, summed in the same order), and the CRC is numprobe::crc32 of the bytes, for every dtype,
// one thread or several, sizes around the fused block (16 granules).
TEST(Stats, FusedCrcPassChangesNothingAndEqualsCrc32) {
  Generator gen(7);
  for (DType t : kAllTypes) {
    for (size_t n : {size_t{0}, size_t{5}, size_t{262143}, size_t{262145}, size_t{700001}}) {
      const Sample s = gen.make(t, n, 1, 0.001);
      const size_t bytes = n * dtype_size(t);
      for (int threads : {1, 2, 3}) {
        StatsOptions plain;
        plain.threads = threads;
        plain.parallel_threshold = 1000;
        StatsOptions fused = plain;
        uint32_t crc = 12345;
        fused.crc32 = &crc;
        const TensorStats a = compute_stats(s.data(), s.size(), t, plain);
        const TensorStats b = compute_stats(s.data(), s.size(), t, fused);
        const std::string what = std::string(dtype_name(t)) + " n=" + std::to_string(n) +
                                 " threads=" + std::to_string(threads);
        EXPECT_EQ(crc, crc32(s.data(), bytes)) << what;
        EXPECT_EQ(a.count, b.count) << what;
        EXPECT_EQ(a.nan_count + a.pos_inf_count + a.neg_inf_count + a.zero_count,
                  b.nan_count + b.pos_inf_count + b.neg_inf_count + b.zero_count)
            << what;
        expect_same_double(a.min, b.min, what);
        expect_same_double(a.max, b.max, what);
        expect_same_double(a.sum, b.sum, what);
        expect_same_double(a.sumsq, b.sumsq, what);
      }
    }
  }
}

}  // namespace
}  // namespace numprobe
