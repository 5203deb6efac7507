#include <algorithm>
#include <cmath>
#include <cstring>

#include "compare/tensor_metrics_kernel.h"
#include "numprobe/compare/tensor_metrics.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

template <typename T>
void widen(const void* data, size_t n, double* out) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    T v;
    memcpy(&v, p + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

template <typename T, typename F>
void widen_with(const void* data, size_t n, double* out, F decode) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    T v;
    memcpy(&v, p + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(decode(v));
  }
}

}  // namespace

double dtype_epsilon(DType d) {
  switch (d) {
    case DType::kF64:
      return std::ldexp(1.0, -52);
    case DType::kF32:
      return std::ldexp(1.0, -23);
    case DType::kF16:
      return std::ldexp(1.0, -10);
    case DType::kBF16:
      return std::ldexp(1.0, -7);
    case DType::kF8E4M3FN:
      return std::ldexp(1.0, -3);
    case DType::kF8E5M2:
      return std::ldexp(1.0, -2);
    default:
      return 0;
  }
}

void decode_to_double(const void* data, size_t n, DType dtype, double* out) {
  switch (dtype) {
    case DType::kF64:
      return widen<double>(data, n, out);
    case DType::kF32:
      return widen<float>(data, n, out);
    case DType::kF16:
      return internal::decode_f16(static_cast<const uint16_t*>(data), n, out);
    case DType::kBF16:
      return widen_with<uint16_t>(data, n, out, [](uint16_t v) { return bf16_to_float(v); });
    case DType::kF8E4M3FN:
      return widen_with<uint8_t>(data, n, out, fp8_e4m3fn_to_float);
    case DType::kF8E5M2:
      return widen_with<uint8_t>(data, n, out, fp8_e5m2_to_float);
    case DType::kI8:
      return widen<int8_t>(data, n, out);
    case DType::kI16:
      return widen<int16_t>(data, n, out);
    case DType::kI32:
      return widen<int32_t>(data, n, out);
    case DType::kI64:
      return widen<int64_t>(data, n, out);
    case DType::kU8:
      return widen<uint8_t>(data, n, out);
    case DType::kBool:
      return widen_with<uint8_t>(data, n, out, [](uint8_t v) { return v != 0 ? 1.0 : 0.0; });
    case DType::kUnknown:
      break;
  }
  throw Error("cannot decode tensor of unknown dtype");
}

namespace {

double lanes_sum(const double* v) {
  double s = 0;
  for (size_t l = 0; l < internal::kMetricLanes; ++l) s += v[l];
  return s;
}
double lanes_max(const double* v) {
  double m = 0;
  for (size_t l = 0; l < internal::kMetricLanes; ++l) m = std::max(m, v[l]);
  return m;
}

}  // namespace

TensorMetrics tensor_metrics(const void* t, DType t_dtype, size_t tn, const void* g, DType g_dtype,
                             size_t gn, DType golden_dtype, bool zero_dim) {
  TensorMetrics m;
  if (tn != gn) {
    m.reason = TensorVerdictReason::kShapeMismatch;
    return m;
  }
  if (tn == 0) {
    m.reason = TensorVerdictReason::kEmpty;
    return m;
  }
  // Non-finite values must sit at the same positions with the same values; they are then left
  // out of every metric (msprobe zeroes them, which is the same for every metric below).
  const double eps = dtype_epsilon(golden_dtype);
  const double zero_floor = eps > 0 ? eps : 1.0;  // integers: a difference of 1 is 100 %
  const double thr1 = 0.001 + eps, thr5 = 0.005 + eps;
  // Blocks decoded to double stay in L1: one streaming pass over the files, no full-size copies.
  constexpr size_t kBlock = 1024;
  constexpr size_t kPad = 8;  // the kernel takes multiples of 8
  static_assert(kBlock % kPad == 0, "blocks hold whole lane groups");
  double ta[kBlock], ga[kBlock];
  const size_t tsz = dtype_size(t_dtype), gsz = dtype_size(g_dtype);
  const auto* tp = static_cast<const unsigned char*>(t);
  const auto* gp = static_cast<const unsigned char*>(g);
  internal::TensorMetricAccum s;
  for (size_t at = 0; at < tn; at += kBlock) {
    const size_t n = std::min(kBlock, tn - at);
    decode_to_double(tp + at * tsz, n, t_dtype, ta);
    decode_to_double(gp + at * gsz, n, g_dtype, ga);
    const size_t padded = (n + kPad - 1) / kPad * kPad;
    std::fill(ta + n, ta + padded, 0.0);
    std::fill(ga + n, ga + padded, 0.0);
    if (!internal::tensor_metric_block(ta, ga, padded, zero_floor, thr1, thr5, &s)) {
      m.reason = TensorVerdictReason::kNanInfMismatch;
      return m;
    }
  }
  // Padding zeros counted as within both thresholds: take them out again.
  const double pad = static_cast<double>((kPad - tn % kPad) % kPad);
  m.has_errors = true;
  m.max_abs = lanes_max(s.max_abs);
  m.max_rel = lanes_max(s.max_rel);
  if (zero_dim) {
    m.reason = TensorVerdictReason::kZeroDim;
    return m;
  }
  m.has_euclidean = true;
  m.euclidean = std::sqrt(lanes_sum(s.sq));
  m.has_ratios = true;
  m.one_thousandth = (lanes_sum(s.within1) - pad) / static_cast<double>(tn);
  m.five_thousandths = (lanes_sum(s.within5) - pad) / static_cast<double>(tn);
  if (tn == 1) {
    m.reason = TensorVerdictReason::kLengthOne;
    return m;
  }
  m.has_cosine = true;
  const double tiny = std::ldexp(1.0, -52);
  const double tnorm = std::sqrt(lanes_sum(s.tt)), gnorm = std::sqrt(lanes_sum(s.gg));
  if (tnorm <= tiny && gnorm <= tiny) {
    m.cosine = 1.0;
  } else if (tnorm <= tiny || gnorm <= tiny) {
    m.cosine = NAN;
    m.cosine_zero_side = true;
  } else {
    m.cosine = lanes_sum(s.dot) / (tnorm * gnorm);
  }
  return m;
}

TensorMetrics tensor_metrics(const double* t, size_t tn, const double* g, size_t gn,
                             DType golden_dtype, bool zero_dim) {
  return tensor_metrics(t, DType::kF64, tn, g, DType::kF64, gn, golden_dtype, zero_dim);
}

}  // namespace numprobe
