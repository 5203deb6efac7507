#include <cmath>
#include <cstring>

#include "numprobe/compare_tensor.h"
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
      return widen_with<uint16_t>(data, n, out, half_to_float);
    case DType::kBF16:
      return widen_with<uint16_t>(data, n, out, bf16_to_float);
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

TensorMetrics tensor_metrics(const double* t, size_t tn, const double* g, size_t gn,
                             DType golden_dtype, bool zero_dim) {
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
  for (size_t i = 0; i < tn; ++i) {
    bool tf = std::isfinite(t[i]), gf = std::isfinite(g[i]);
    if (tf != gf || (!tf && !(t[i] == g[i] || (std::isnan(t[i]) && std::isnan(g[i]))))) {
      m.reason = TensorVerdictReason::kNanInfMismatch;
      return m;
    }
  }
  const double eps = dtype_epsilon(golden_dtype);
  const double zero_floor = eps > 0 ? eps : 1.0;  // integers: a difference of 1 is 100 %
  const double thr1 = 0.001 + eps, thr5 = 0.005 + eps;
  double dot = 0, tt = 0, gg = 0, sq = 0, max_abs = 0, max_rel = 0;
  size_t within1 = 0, within5 = 0;
  for (size_t i = 0; i < tn; ++i) {
    double a = t[i], b = g[i];
    if (!std::isfinite(a)) a = b = 0;
    const double d = std::fabs(a - b);
    const double rel = b != 0 ? d / std::fabs(b) : (d == 0 ? 0 : d / zero_floor);
    dot += a * b;
    tt += a * a;
    gg += b * b;
    sq += d * d;
    if (d > max_abs) max_abs = d;
    if (rel > max_rel) max_rel = rel;
    within1 += rel <= thr1;
    within5 += rel <= thr5;
  }
  m.has_errors = true;
  m.max_abs = max_abs;
  m.max_rel = max_rel;
  if (zero_dim) {
    m.reason = TensorVerdictReason::kZeroDim;
    return m;
  }
  m.has_euclidean = true;
  m.euclidean = std::sqrt(sq);
  m.has_ratios = true;
  m.one_thousandth = static_cast<double>(within1) / static_cast<double>(tn);
  m.five_thousandths = static_cast<double>(within5) / static_cast<double>(tn);
  if (tn == 1) {
    m.reason = TensorVerdictReason::kLengthOne;
    return m;
  }
  m.has_cosine = true;
  const double tiny = std::ldexp(1.0, -52);
  const double tnorm = std::sqrt(tt), gnorm = std::sqrt(gg);
  if (tnorm <= tiny && gnorm <= tiny) {
    m.cosine = 1.0;
  } else if (tnorm <= tiny || gnorm <= tiny) {
    m.cosine = NAN;
    m.cosine_zero_side = true;
  } else {
    m.cosine = dot / (tnorm * gnorm);
  }
  return m;
}

}  // namespace numprobe
