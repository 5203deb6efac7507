// SIMD statistics kernels, compiled once per Highway target and dispatched at run time.
//
// Data is processed in blocks of a few KiB. A block first runs through the fast loop (convert, add,
// fma, min, max, zero count). NaN or Inf anywhere in the block makes some float64 accumulator
// non-finite, in which case the block, still in L1, is redone by the careful loop, which masks
// non-finite lanes out of the sums and counts them. Finite float64 inputs that overflow the sums
// also take the careful loop; it gives the same (infinite) sums. After a block with non-finite
// values the following ones go straight to the careful loop until one comes out clean.

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/stats_accum.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/stats_kernels.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace numprobe::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <typename T>
HWY_INLINE T LoadScalar(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Elements of every block; multiples of every target's step, and divisors of kStatsGranule so that
// per-thread chunks consist of the same blocks as a single-threaded pass.
constexpr size_t kBlock32 = 4096;
constexpr size_t kBlock16 = 8192;
constexpr size_t kBlock64 = 2048;
constexpr size_t kBlockFp8 = 4096;
static_assert(kStatsGranule % kBlock16 == 0 && kStatsGranule % kBlock32 == 0 &&
                  kStatsGranule % kBlock64 == 0 && kStatsGranule % kBlockFp8 == 0,
              "blocks must tile a granule");

#if HWY_TARGET == HWY_SCALAR

// Only CPUs without SSSE3 get here; keep it simple.
template <typename T, typename Decode>
void ScalarRun(const void* p, size_t n, StatsAccum* acc, Decode decode) {
  const auto* b = static_cast<const uint8_t*>(p);
  acc->count += n;
  for (size_t i = 0; i < n; ++i) acc->add_value(decode(LoadScalar<T>(b + i * sizeof(T))));
}

double DecodeF64(double v) {
  return v;
}
double DecodeF32(float v) {
  return v;
}
double DecodeF16(uint16_t v) {
  return half_to_float(v);
}
double DecodeBF16(uint16_t v) {
  return bf16_to_float(v);
}

void StatsF64(const void* p, size_t n, StatsAccum* acc) {
  ScalarRun<double>(p, n, acc, DecodeF64);
}
void StatsF32(const void* p, size_t n, StatsAccum* acc) {
  ScalarRun<float>(p, n, acc, DecodeF32);
}
void StatsF16(const void* p, size_t n, StatsAccum* acc) {
  ScalarRun<uint16_t>(p, n, acc, DecodeF16);
}
void StatsBF16(const void* p, size_t n, StatsAccum* acc) {
  ScalarRun<uint16_t>(p, n, acc, DecodeBF16);
}
void StatsFp8(const void* p, size_t n, const float* table, StatsAccum* acc) {
  const auto* b = static_cast<const uint8_t*>(p);
  acc->count += n;
  for (size_t i = 0; i < n; ++i) acc->add_value(table[b[i]]);
}

#else  // SIMD targets: at least two float64 lanes.

using DF = hn::ScalableTag<float>;
using DD = hn::Repartition<double, DF>;
using DH = hn::Half<DF>;
using VF = hn::Vec<DF>;
using VD = hn::Vec<DD>;

// Integer lanes are summed in int64 so narrow counters cannot overflow in the reduction.
template <class D, typename T = hn::TFromD<D>,
          typename R = std::conditional_t<std::is_floating_point_v<T>, T, int64_t> >
HWY_INLINE R ReduceSum(D d, hn::Vec<D> v) {
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  R s = lanes[0];
  for (size_t i = 1; i < hn::Lanes(d); ++i) s += lanes[i];
  return s;
}

template <class D>
HWY_INLINE void ReduceMinMax(D d, hn::Vec<D> mn, hn::Vec<D> mx, StatsAccum* acc) {
  HWY_ALIGN hn::TFromD<D> lo[hn::MaxLanes(d)];
  HWY_ALIGN hn::TFromD<D> hi[hn::MaxLanes(d)];
  hn::Store(mn, d, lo);
  hn::Store(mx, d, hi);
  for (size_t i = 0; i < hn::Lanes(d); ++i) acc->add_min_max(lo[i], hi[i]);
}

// Sources of 32-bit-float data. Load(i) yields elements [i, i + 2 * Lanes(DF)) both as two float
// vectors (v0, v1) and as four double vectors (d0..d3) holding the same elements in some order, and
// adds the number of elements equal to +-0 to `zeros`. Counting zeros into a general-purpose
// register rather than a vector accumulator keeps the loop within AVX2's 16 vector registers.
struct F32Source {
  static constexpr bool kFmaSum = true;
  const uint8_t* p;
  F32Source At(size_t i) const { return {p + i * 4}; }
  float Scalar(size_t i) const { return LoadScalar<float>(p + i * 4); }
  HWY_INLINE void Load(size_t i, VF& v0, VF& v1, VD& d0, VD& d1, VD& d2, VD& d3,
                       size_t& zeros) const {
    const DF df;
    const DD dd;
    const DH dh;
    const size_t n = hn::Lanes(df);
    const float* f = reinterpret_cast<const float*>(p) + i;
    v0 = hn::LoadU(df, f);
    v1 = hn::LoadU(df, f + n);
    // Converting straight from memory avoids cross-lane extracts.
    d0 = hn::PromoteTo(dd, hn::LoadU(dh, f));
    d1 = hn::PromoteTo(dd, hn::LoadU(dh, f + n / 2));
    d2 = hn::PromoteTo(dd, hn::LoadU(dh, f + n));
    d3 = hn::PromoteTo(dd, hn::LoadU(dh, f + n + n / 2));
    const VF z = hn::Zero(df);
    zeros += hn::CountTrue(df, hn::Eq(v0, z)) + hn::CountTrue(df, hn::Eq(v1, z));
  }
};

HWY_INLINE void Widen(VF v, VD& lo, VD& hi) {
  const DD dd;
  const DH dh;
  lo = hn::PromoteTo(dd, hn::LowerHalf(dh, v));
  hi = hn::PromoteTo(dd, hn::UpperHalf(dh, v));
}

// 16-bit floats are +-0 exactly when the bits without the sign are zero.
HWY_INLINE size_t CountZeros16(const uint8_t* p) {
  const hn::Repartition<uint16_t, DF> d16;
  const auto bits = hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p));
  return hn::CountTrue(d16, hn::Eq(hn::ShiftLeft<1>(bits), hn::Zero(d16)));
}

// Half to float for Lanes(DF) halves at p. Highway 1.0.3 converts with F16C where the target has
// it; its fallback for older x86 targets (SSE4, SSSE3) turns Inf and NaN into finite numbers, so
// those targets use this exact integer version instead.
HWY_INLINE VF LoadHalves(const uint8_t* p) {
  const DF df;
#if HWY_ARCH_X86 && HWY_TARGET >= HWY_SSE4
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int16_t, DF> di16;
  // Zero-extend: sign-extending int16 would smear the sign bit into the exponent.
  const auto bits = hn::And(hn::PromoteTo(di, hn::LoadU(di16, reinterpret_cast<const int16_t*>(p))),
                            hn::Set(di, 0xFFFF));
  const auto mag = hn::And(bits, hn::Set(di, 0x7FFF));
  const auto sign = hn::BitCast(df, hn::ShiftLeft<16>(hn::Xor(bits, mag)));
  // Exponent and mantissa moved to float positions give the value times 2^-112, subnormals too.
  const VF finite = hn::Mul(hn::BitCast(df, hn::ShiftLeft<13>(mag)), hn::Set(df, 0x1.0p112f));
  const VF special = hn::BitCast(df, hn::Or(hn::ShiftLeft<13>(mag), hn::Set(di, 0x7F800000)));
  const auto is_special = hn::RebindMask(df, hn::Gt(mag, hn::Set(di, 0x7BFF)));
  return hn::Or(hn::IfThenElse(is_special, special, finite), sign);
#else
  const hn::Rebind<hwy::float16_t, DF> dh16;
  return hn::PromoteTo(df, hn::LoadU(dh16, reinterpret_cast<const hwy::float16_t*>(p)));
#endif
}

struct F16Source {
  static constexpr bool kFmaSum = false;
  const uint8_t* p;
  F16Source At(size_t i) const { return {p + i * 2}; }
  float Scalar(size_t i) const { return half_to_float(LoadScalar<uint16_t>(p + i * 2)); }
  HWY_INLINE void Load(size_t i, VF& v0, VF& v1, VD& d0, VD& d1, VD& d2, VD& d3,
                       size_t& zeros) const {
    const size_t n = hn::Lanes(DF());
    v0 = LoadHalves(p + i * 2);
    v1 = LoadHalves(p + (i + n) * 2);
    Widen(v0, d0, d1);
    Widen(v1, d2, d3);
    zeros += CountZeros16(p + i * 2);
  }
};

struct BF16Source {
  static constexpr bool kFmaSum = false;
  const uint8_t* p;
  BF16Source At(size_t i) const { return {p + i * 2}; }
  float Scalar(size_t i) const { return bf16_to_float(LoadScalar<uint16_t>(p + i * 2)); }
  HWY_INLINE void Load(size_t i, VF& v0, VF& v1, VD& d0, VD& d1, VD& d2, VD& d3,
                       size_t& zeros) const {
    // Each 32-bit lane holds two bf16 (little-endian): the low one becomes a float by shifting it
    // up, the high one by clearing the low half. Order does not matter for statistics.
    const DF df;
    const hn::RebindToUnsigned<DF> du;
    const auto u = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p + i * 2));
    v0 = hn::BitCast(df, hn::ShiftLeft<16>(u));
    v1 = hn::BitCast(df, hn::And(u, hn::Set(du, 0xFFFF0000u)));
    Widen(v0, d0, d1);
    Widen(v1, d2, d3);
    zeros += CountZeros16(p + i * 2);
  }
};

// One block of `steps` * 2 * Lanes(DF) elements. The fast variant returns false, leaving acc
// untouched, when the block has non-finite values; the careful one returns whether it saw any.
// Eight vector accumulators leave room in AVX2's 16 registers for the temporaries; with more, GCC
// spills one and the store-to-load latency then bounds the loop.
template <bool kCareful, class Src>
HWY_NOINLINE bool Block32(const Src& src, size_t steps, StatsAccum* acc) {
  const DF df;
  const DD dd;
  const size_t step = 2 * hn::Lanes(df);
  const VF zero = hn::Zero(df);
  const VF inf = hn::Set(df, std::numeric_limits<float>::infinity());
  const VF neg_inf = hn::Neg(inf);
  VF mn = inf, mx = neg_inf;
  const VD one = hn::Set(dd, 1.0);
  VD s0 = hn::Zero(dd), s1 = s0;
  VD q0 = s0, q1 = s0, q2 = s0, q3 = s0;
  size_t zeros = 0;
  size_t nan = 0, pos_inf = 0, neg_inf_n = 0;
  for (size_t k = 0; k < steps; ++k) {
    VF v0, v1;
    VD d0, d1, d2, d3;
    src.Load(k * step, v0, v1, d0, d1, d2, d3, zeros);
    if constexpr (kCareful) {
      const auto nan0 = hn::IsNaN(v0);
      const auto nan1 = hn::IsNaN(v1);
      const auto inf0 = hn::IsInf(v0);
      const auto inf1 = hn::IsInf(v1);
      nan += hn::CountTrue(df, nan0) + hn::CountTrue(df, nan1);
      pos_inf += hn::CountTrue(df, hn::And(inf0, hn::Gt(v0, zero))) +
                 hn::CountTrue(df, hn::And(inf1, hn::Gt(v1, zero)));
      neg_inf_n += hn::CountTrue(df, hn::And(inf0, hn::Lt(v0, zero))) +
                   hn::CountTrue(df, hn::And(inf1, hn::Lt(v1, zero)));
      mn = hn::Min(mn, hn::Min(hn::IfThenElse(nan0, inf, v0), hn::IfThenElse(nan1, inf, v1)));
      mx = hn::Max(mx,
                   hn::Max(hn::IfThenElse(nan0, neg_inf, v0), hn::IfThenElse(nan1, neg_inf, v1)));
      d0 = hn::IfThenElseZero(hn::IsFinite(d0), d0);
      d1 = hn::IfThenElseZero(hn::IsFinite(d1), d1);
      d2 = hn::IfThenElseZero(hn::IsFinite(d2), d2);
      d3 = hn::IfThenElseZero(hn::IsFinite(d3), d3);
    } else {
      mn = hn::Min(mn, hn::Min(v0, v1));
      mx = hn::Max(mx, hn::Max(v0, v1));
    }
    // Pairwise pre-adds keep the sum to two accumulators (register pressure) at the same cost.
    // Where registers allow, the sum runs on the FMA units to offload the adder pipes.
    if constexpr (Src::kFmaSum) {
      s0 = hn::MulAdd(one, hn::Add(d0, d1), s0);
      s1 = hn::MulAdd(one, hn::Add(d2, d3), s1);
    } else {
      s0 = hn::Add(s0, hn::Add(d0, d1));
      s1 = hn::Add(s1, hn::Add(d2, d3));
    }
    q0 = hn::MulAdd(d0, d0, q0);
    q1 = hn::MulAdd(d1, d1, q1);
    q2 = hn::MulAdd(d2, d2, q2);
    q3 = hn::MulAdd(d3, d3, q3);
  }
  const VD s = hn::Add(s0, s1);
  const VD q = hn::Add(hn::Add(q0, q1), hn::Add(q2, q3));
  if constexpr (!kCareful) {
    if (!hn::AllTrue(dd, hn::IsFinite(hn::Add(s, q)))) return false;
  }
  acc->add_sum(ReduceSum(dd, s));
  acc->add_sumsq(ReduceSum(dd, q));
  ReduceMinMax(df, mn, mx, acc);
  acc->zero += zeros;
  acc->nan += nan;
  acc->pos_inf += pos_inf;
  acc->neg_inf += neg_inf_n;
  return kCareful ? (nan | pos_inf | neg_inf_n) != 0 : true;
}

// After a block with non-finite values the next one probably has some too (masked attention
// scores, overflowed activations), so stay on the careful loop until a block comes out clean.
template <class Src>
void Run32(const Src& src, size_t n, size_t block, StatsAccum* acc) {
  const size_t step = 2 * hn::Lanes(DF());
  acc->count += n;
  size_t i = 0;
  bool careful = false;
  while (n - i >= step) {
    const size_t len = std::min(block, (n - i) / step * step);
    const Src sub = src.At(i);
    if (careful || !Block32<false>(sub, len / step, acc)) {
      careful = Block32<true>(sub, len / step, acc);
    }
    i += len;
  }
  for (; i < n; ++i) acc->add_value(src.Scalar(i));
}

void StatsF32(const void* p, size_t n, StatsAccum* acc) {
  Run32(F32Source{static_cast<const uint8_t*>(p)}, n, kBlock32, acc);
}
void StatsF16(const void* p, size_t n, StatsAccum* acc) {
  Run32(F16Source{static_cast<const uint8_t*>(p)}, n, kBlock16, acc);
}
void StatsBF16(const void* p, size_t n, StatsAccum* acc) {
  Run32(BF16Source{static_cast<const uint8_t*>(p)}, n, kBlock16, acc);
}

void StatsFp8(const void* p, size_t n, const float* table, StatsAccum* acc) {
  const auto* b = static_cast<const uint8_t*>(p);
  HWY_ALIGN float decoded[kBlockFp8];
  for (size_t i = 0; i < n; i += kBlockFp8) {
    const size_t len = std::min(kBlockFp8, n - i);
    for (size_t j = 0; j < len; ++j) decoded[j] = table[b[i + j]];
    Run32(F32Source{reinterpret_cast<const uint8_t*>(decoded)}, len, kBlockFp8, acc);
  }
}

// float64 input: same structure without conversions; four vectors per step. The fast variant
// returns false, leaving acc untouched, when the block has non-finite values or its sums overflow;
// the careful one returns whether it saw any non-finite value.
template <bool kCareful>
HWY_NOINLINE bool Block64(const uint8_t* p, size_t steps, StatsAccum* acc) {
  const DD dd;
  const hn::RebindToSigned<DD> di;
  const size_t n = hn::Lanes(dd);
  const VD zero = hn::Zero(dd);
  const VD inf = hn::Set(dd, std::numeric_limits<double>::infinity());
  const VD neg_inf = hn::Neg(inf);
  VD mn0 = inf, mn1 = inf, mx0 = neg_inf, mx1 = neg_inf;
  VD s0 = zero, s1 = zero, s2 = zero, s3 = zero;
  VD q0 = zero, q1 = zero, q2 = zero, q3 = zero;
  hn::Vec<decltype(di)> z0 = hn::Zero(di), z1 = z0;
  size_t nan = 0, pos_inf = 0, neg_inf_n = 0;
  const double* f = reinterpret_cast<const double*>(p);
  for (size_t k = 0; k < steps; ++k, f += 4 * n) {
    VD v[4] = {hn::LoadU(dd, f), hn::LoadU(dd, f + n), hn::LoadU(dd, f + 2 * n),
               hn::LoadU(dd, f + 3 * n)};
    VD lo[4] = {v[0], v[1], v[2], v[3]};
    VD hi[4] = {v[0], v[1], v[2], v[3]};
    if constexpr (kCareful) {
      for (int j = 0; j < 4; ++j) {
        const auto is_nan = hn::IsNaN(v[j]);
        const auto is_inf = hn::IsInf(v[j]);
        nan += hn::CountTrue(dd, is_nan);
        pos_inf += hn::CountTrue(dd, hn::And(is_inf, hn::Gt(v[j], zero)));
        neg_inf_n += hn::CountTrue(dd, hn::And(is_inf, hn::Lt(v[j], zero)));
        lo[j] = hn::IfThenElse(is_nan, inf, v[j]);
        hi[j] = hn::IfThenElse(is_nan, neg_inf, v[j]);
      }
    }
    mn0 = hn::Min(mn0, hn::Min(lo[0], lo[1]));
    mn1 = hn::Min(mn1, hn::Min(lo[2], lo[3]));
    mx0 = hn::Max(mx0, hn::Max(hi[0], hi[1]));
    mx1 = hn::Max(mx1, hn::Max(hi[2], hi[3]));
    z0 = hn::Sub(z0, hn::BitCast(di, hn::VecFromMask(dd, hn::Eq(v[0], zero))));
    z1 = hn::Sub(z1, hn::BitCast(di, hn::VecFromMask(dd, hn::Eq(v[1], zero))));
    z0 = hn::Sub(z0, hn::BitCast(di, hn::VecFromMask(dd, hn::Eq(v[2], zero))));
    z1 = hn::Sub(z1, hn::BitCast(di, hn::VecFromMask(dd, hn::Eq(v[3], zero))));
    if constexpr (kCareful) {
      for (int j = 0; j < 4; ++j) v[j] = hn::IfThenElseZero(hn::IsFinite(v[j]), v[j]);
    }
    s0 = hn::Add(s0, v[0]);
    s1 = hn::Add(s1, v[1]);
    s2 = hn::Add(s2, v[2]);
    s3 = hn::Add(s3, v[3]);
    q0 = hn::MulAdd(v[0], v[0], q0);
    q1 = hn::MulAdd(v[1], v[1], q1);
    q2 = hn::MulAdd(v[2], v[2], q2);
    q3 = hn::MulAdd(v[3], v[3], q3);
  }
  const VD s = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
  const VD q = hn::Add(hn::Add(q0, q1), hn::Add(q2, q3));
  if constexpr (!kCareful) {
    if (!hn::AllTrue(dd, hn::IsFinite(hn::Add(s, q)))) return false;
  }
  acc->add_sum(ReduceSum(dd, s));
  acc->add_sumsq(ReduceSum(dd, q));
  ReduceMinMax(dd, hn::Min(mn0, mn1), hn::Max(mx0, mx1), acc);
  acc->zero += static_cast<uint64_t>(ReduceSum(di, hn::Add(z0, z1)));
  acc->nan += nan;
  acc->pos_inf += pos_inf;
  acc->neg_inf += neg_inf_n;
  return kCareful ? (nan | pos_inf | neg_inf_n) != 0 : true;
}

void StatsF64(const void* p, size_t n, StatsAccum* acc) {
  const auto* b = static_cast<const uint8_t*>(p);
  const size_t step = 4 * hn::Lanes(DD());
  acc->count += n;
  size_t i = 0;
  bool careful = false;  // as in Run32
  while (n - i >= step) {
    const size_t len = std::min(kBlock64, (n - i) / step * step);
    if (careful || !Block64<false>(b + i * 8, len / step, acc)) {
      careful = Block64<true>(b + i * 8, len / step, acc);
    }
    i += len;
  }
  for (; i < n; ++i) acc->add_value(LoadScalar<double>(b + i * 8));
}

#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace numprobe::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace numprobe::internal {

HWY_EXPORT(StatsF64);
HWY_EXPORT(StatsF32);
HWY_EXPORT(StatsF16);
HWY_EXPORT(StatsBF16);
HWY_EXPORT(StatsFp8);

void stats_f64(const void* p, size_t n, StatsAccum* acc) {
  HWY_DYNAMIC_DISPATCH(StatsF64)(p, n, acc);
}
void stats_f32(const void* p, size_t n, StatsAccum* acc) {
  HWY_DYNAMIC_DISPATCH(StatsF32)(p, n, acc);
}
void stats_f16(const void* p, size_t n, StatsAccum* acc) {
  HWY_DYNAMIC_DISPATCH(StatsF16)(p, n, acc);
}
void stats_bf16(const void* p, size_t n, StatsAccum* acc) {
  HWY_DYNAMIC_DISPATCH(StatsBF16)(p, n, acc);
}
void stats_fp8(const void* p, size_t n, const float* table, StatsAccum* acc) {
  HWY_DYNAMIC_DISPATCH(StatsFp8)(p, n, table, acc);
}

}  // namespace numprobe::internal
#endif  // HWY_ONCE
