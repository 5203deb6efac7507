// The tensor-mode metric loop, compiled once per Highway target and dispatched at run time. The
// summation order follows the target's vector width, so the last bits of the sums may differ
// between machines (never between runs on one machine).
#include "compare/tensor_metrics_kernel.h"

#include "numprobe/dtype.h"

#include <cstdint>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "compare/tensor_metrics_kernel.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace numprobe::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

bool TensorMetricBlock(const double* HWY_RESTRICT t, const double* HWY_RESTRICT g, size_t n,
                       double zero_floor, double thr1, double thr5, TensorMetricAccum* acc) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  auto dot = hn::LoadU(d, acc->dot), tt = hn::LoadU(d, acc->tt), gg = hn::LoadU(d, acc->gg);
  auto sq = hn::LoadU(d, acc->sq), max_abs = hn::LoadU(d, acc->max_abs);
  auto max_rel = hn::LoadU(d, acc->max_rel), w1 = hn::LoadU(d, acc->within1);
  auto w5 = hn::LoadU(d, acc->within5);
  const auto finite_max = hn::Set(d, std::numeric_limits<double>::max());
  const auto zero = hn::Zero(d), one = hn::Set(d, 1.0), floor = hn::Set(d, zero_floor);
  const auto t1 = hn::Set(d, thr1), t5 = hn::Set(d, thr5);
  auto mismatch = hn::FirstN(d, 0);
  for (size_t i = 0; i < n; i += lanes) {
    auto a = hn::LoadU(d, t + i), b = hn::LoadU(d, g + i);
    const auto finite = hn::Le(hn::Abs(a), finite_max);  // false for NaN and +-Inf
    const auto g_finite = hn::Le(hn::Abs(b), finite_max);
    // Non-finite on one side only, or different non-finite values (NaN matches NaN).
    // Not(Eq(x, x)) is isnan: Highway's Ne may be an ordered compare (false for NaN).
    const auto both_nan = hn::Not(hn::Or(hn::Eq(a, a), hn::Eq(b, b)));
    const auto same = hn::Or(hn::Eq(a, b), both_nan);
    mismatch = hn::Or(mismatch, hn::Or(hn::Xor(finite, g_finite), hn::Not(hn::Or(finite, same))));
    a = hn::IfThenElseZero(finite, a);
    b = hn::IfThenElseZero(finite, b);
    const auto diff = hn::Abs(hn::Sub(a, b));
    const auto rel = hn::Div(diff, hn::IfThenElse(hn::Eq(b, zero), floor, hn::Abs(b)));
    dot = hn::MulAdd(a, b, dot);
    tt = hn::MulAdd(a, a, tt);
    gg = hn::MulAdd(b, b, gg);
    sq = hn::MulAdd(diff, diff, sq);
    max_abs = hn::Max(max_abs, diff);
    max_rel = hn::Max(max_rel, rel);
    w1 = hn::Add(w1, hn::IfThenElseZero(hn::Le(rel, t1), one));
    w5 = hn::Add(w5, hn::IfThenElseZero(hn::Le(rel, t5), one));
  }
  hn::StoreU(dot, d, acc->dot);
  hn::StoreU(tt, d, acc->tt);
  hn::StoreU(gg, d, acc->gg);
  hn::StoreU(sq, d, acc->sq);
  hn::StoreU(max_abs, d, acc->max_abs);
  hn::StoreU(max_rel, d, acc->max_rel);
  hn::StoreU(w1, d, acc->within1);
  hn::StoreU(w5, d, acc->within5);
  return hn::AllFalse(d, mismatch);
}

void DecodeF16(const uint16_t* HWY_RESTRICT bits, size_t n, double* HWY_RESTRICT out) {
  const hn::ScalableTag<double> d64;
  const hn::Rebind<float, decltype(d64)> d32;
  const hn::Rebind<hwy::float16_t, decltype(d64)> d16;
  const size_t lanes = hn::Lanes(d64);
  const auto* in = reinterpret_cast<const hwy::float16_t*>(bits);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::PromoteTo(d64, hn::PromoteTo(d32, hn::LoadU(d16, in + i))), d64, out + i);
  }
  for (; i < n; ++i) out[i] = static_cast<double>(half_to_float(bits[i]));
}

}  // namespace HWY_NAMESPACE
}  // namespace numprobe::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace numprobe::internal {

HWY_EXPORT(TensorMetricBlock);
HWY_EXPORT(DecodeF16);

void decode_f16(const uint16_t* bits, size_t n, double* out) {
  HWY_DYNAMIC_DISPATCH(DecodeF16)(bits, n, out);
}

bool tensor_metric_block(const double* t, const double* g, size_t n, double zero_floor, double thr1,
                         double thr5, TensorMetricAccum* acc) {
  return HWY_DYNAMIC_DISPATCH(TensorMetricBlock)(t, g, n, zero_floor, thr1, thr5, acc);
}

}  // namespace numprobe::internal
#endif  // HWY_ONCE
