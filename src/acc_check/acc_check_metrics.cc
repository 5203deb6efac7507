// Per-output metrics of acc-check with msprobe's definitions (its api_accuracy_checker compare and
// algorithm modules), computed in float64 in one pass over both outputs, plus the standards'
// absolute verdicts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "acc_check/acc_check_internal.h"
#include "numprobe/acc_check.h"
#include "numprobe/dtype.h"

namespace numprobe {
namespace {

constexpr double kDoubleEps = 2.220446049250313e-16;  // numpy finfo(float64).eps
constexpr double kFloatEps = 1.1920928955078125e-07;
constexpr double kHalfEps = 9.765625e-04;
constexpr double kBf16Eps = 1.0 / 256;  // msprobe's BFLOAT16_EPS

// The precision_configs of msprobe's benchmark standard: |bench| at or below small_value is a
// small value, held to small_value_atol.
struct SmallValueConfig {
  double small_value, small_value_atol;
};
SmallValueConfig small_value_config(AccDtype d) {
  if (d == AccDtype::kFloat32) return {1e-6, 1e-9};
  return {1e-3, 1e-5};
}

double dtype_max(AccDtype d) {
  switch (d) {
    case AccDtype::kFloat16:
      return 65504.0;
    case AccDtype::kBFloat16:
      return 3.3895313892515355e38;
    case AccDtype::kFloat32:
      return 3.4028234663852886e38;
    default:
      return std::numeric_limits<double>::max();
  }
}

// numpy finfo(bench dtype).eps, except msprobe's fixed 2^-8 for bf16 devices.
double bench_eps(AccDtype device, std::string_view bench_dtype) {
  if (device == AccDtype::kBFloat16) return kBf16Eps;
  switch (acc_dtype_from_name(bench_dtype)) {
    case AccDtype::kFloat16:
      return kHalfEps;
    case AccDtype::kFloat32:
    case AccDtype::kBFloat16:
      return kFloatEps;
    default:
      return kDoubleEps;
  }
}

// share of elements with rel err below threshold, and whether it exceeds 1 - threshold
struct Ratio {
  double value;
  bool ok;
};
Ratio rel_err_ratio(size_t below, size_t n, double threshold) {
  if (n == 0) return {1.0, true};
  const double v = static_cast<double>(below) / static_cast<double>(n);
  return {v, v > 1.0 - threshold};
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

template <typename B, typename D>
struct Views {
  const B* b;
  const D* d;
  size_t n;
};

// What a comparison needs per element, fixed for one output.
struct PassParams {
  AccDtype dt;
  double eps, maxv;
  AbsoluteThresholds abs;
  SmallValueConfig small;
  // ULP standard: eb = max(floor(log2|bench|), min_eb); error in units of 2^(eb - mant)
  int min_eb, mant;
  double min_eb_value;  // 2^min_eb
  double ulp_threshold;
};

PassParams pass_params(AccDtype dt, double eps) {
  PassParams p{};
  p.dt = dt;
  p.eps = eps;
  p.maxv = dtype_max(dt);
  p.abs = absolute_thresholds(dt);
  p.small = small_value_config(dt);
  p.min_eb = dt == AccDtype::kFloat16 ? -14 : -126;
  p.mant = dt == AccDtype::kFloat16 ? 10 : (dt == AccDtype::kBFloat16 ? 7 : 23);
  p.min_eb_value = std::ldexp(1.0, p.min_eb);
  p.ulp_threshold = dt == AccDtype::kFloat32 ? 32.0 : 1.0;
  return p;
}

// Which standard's element sums a pass gathers besides the cascade's; kCascade: float64 outputs,
// which get msprobe's cascade only. The thousandth standard gets the benchmark metrics too.
enum class Kind : uint8_t { kCascade, kBinary, kAbsolute, kUlp, kBenchmark };

// floor(log2(a)) for a > 0 exactly as std::floor(std::log2(a)) gives it, without the logarithm
// where the exponent field decides: only a mantissa within 2^-30 of 2 (where log2 may round up to
// the next integer) and non-finite values take the libm path.
double floor_log2(double a) {
  uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const int biased = static_cast<int>(bits >> 52) & 0x7ff;
  const uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  if (biased == 0 || biased == 0x7ff || frac >= (uint64_t{1} << 52) - (uint64_t{1} << 22))
    return std::floor(std::log2(a));
  return static_cast<double>(biased - 1023);
}

// msprobe's ULP error of one element: (device - bench) * 2^(mant - eb); float32 outputs in
// float64 arithmetic, narrower ones in float32.
double ulp_error(double b, double d, const PassParams& p) {
  const double ab = std::fabs(b);
  double eb;
  if (ab == 0)
    eb = 0.0;
  else if (ab < p.min_eb_value)
    eb = p.min_eb;
  else
    eb = std::max(floor_log2(ab), static_cast<double>(p.min_eb));
  // eb is an integer (or inf/NaN: then exp2 as msprobe); 2^k built from its exponent bits
  double scale;
  const int k = std::isfinite(eb) ? p.mant - static_cast<int>(eb) : 0;
  if (std::isfinite(eb) && k >= -1022 && k <= 1023) {
    const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
    std::memcpy(&scale, &bits, sizeof scale);
  } else {
    scale = std::exp2(-eb + p.mant);
  }
  double u;
  if (p.dt == AccDtype::kFloat32) {
    u = (d - b) * scale;
  } else {
    const float diff = static_cast<float>(d) - static_cast<float>(b);
    u = static_cast<double>(diff * static_cast<float>(scale));
  }
  return std::fabs(u);
}

// Everything the metrics need, gathered in one pass over both outputs (each element is read once,
// from the dtype it is stored in; nothing is widened into a copy). Sums run in element order, as
// msprobe's numpy code and the earlier separate passes did, so they round the same way.
struct Sums {
  // msprobe's cascade: max abs err (NaN when any is NaN), counts of rel err below 1e-2/3/4
  size_t below2 = 0, below3 = 0, below4 = 0;
  double max_abs = 0;
  bool abs_nan = false;
  // cosine: max |x| per side, unscaled dot products (rescaled afterwards)
  double dmax = 0, bmax = 0, dot = 0, dd = 0, bb = 0;
  bool nan = false;
  bool nonfinite = false;  // some element not finite on either side
  // numprobe's relative L2 error over the elements finite on both sides
  double l2_num = 0, l2_den = 0;
  // binary standard
  size_t diff = 0;
  // absolute-threshold standard (small/small_bad also the benchmark standard's small values)
  size_t inf_nan = 0, inf_nan_bad = 0, small = 0, small_bad = 0, normal = 0, normal_bad = 0;
  // ULP standard
  double ulp_max = -std::numeric_limits<double>::infinity(), ulp_sum = 0;
  size_t ulp_over = 0;
  // benchmark standard
  size_t masked = 0, larger = 0, smaller = 0, rel_n = 0;
  double sq = 0, rel_max = -1, rel_sum = 0;
  bool rel_nan = false;
};

// The pass runs block by block: the cascade/cosine loop and the standard's loop each go over a
// block still in L1, with few enough accumulators to stay in registers, and the relative errors
// of the block are kept for the second loop. Every sum still adds its elements in order, so the
// split changes no bit. Blocks whose elements are all finite (nearly all) skip the per-element
// NaN/Inf bookkeeping; the others are rescanned for it.
constexpr size_t kBlock = 2048;

// Returns whether the block may hold a non-finite element (then its flags need the rescan).
template <typename B, typename D>
bool gather_cascade(const B* bp, const D* dp, size_t n, double eps, double* rel, Sums& s) {
  size_t below2 = s.below2, below3 = s.below3, below4 = s.below4;
  double max_abs = s.max_abs, dmax = s.dmax, bmax = s.bmax, dot = s.dot, dd = s.dd, bb = s.bb;
  double abs_sum = 0;  // NaN or inf exactly when some element is (or |d - b| overflowed)
  for (size_t i = 0; i < n; ++i) {
    const double b = static_cast<double>(bp[i]), d = static_cast<double>(dp[i]);
    const double a = std::fabs(d - b), ab = std::fabs(b);
    const double r = a / (ab + eps);
    rel[i] = r;
    below2 += r < 1e-2;
    below3 += r < 1e-3;
    below4 += r < 1e-4;
    abs_sum += a;
    max_abs = std::max(max_abs, a);
    dmax = std::max(dmax, std::fabs(d));
    bmax = std::max(bmax, ab);
    dot += d * b;
    dd += d * d;
    bb += b * b;
  }
  s.below2 = below2, s.below3 = below3, s.below4 = below4;
  s.max_abs = max_abs, s.dmax = dmax, s.bmax = bmax, s.dot = dot, s.dd = dd, s.bb = bb;
  if (std::isfinite(abs_sum)) return false;
  bool nonfinite = false;
  for (size_t i = 0; i < n; ++i) {
    const double b = static_cast<double>(bp[i]), d = static_cast<double>(dp[i]);
    s.abs_nan |= std::isnan(d - b);
    nonfinite |= !(std::isfinite(b) && std::isfinite(d));
    s.nan |= std::isnan(d) || std::isnan(b);
  }
  s.nonfinite |= nonfinite;
  return nonfinite;
}

// The bench in the device dtype (msprobe's bench.astype(device dtype)); bf16 outputs were
// widened to float32 on both sides, as msprobe does.
template <AccDtype T>
inline double in_device_dtype(double v) {
  if constexpr (T == AccDtype::kFloat16)
    return half_to_float(float_to_half(static_cast<float>(v)));
  else
    return static_cast<double>(static_cast<float>(v));
}

// kAllFinite: every element of the block is finite on both sides and the bench stays within the
// device dtype's range, so no element is masked as non-finite.
template <Kind K, AccDtype T, bool kAllFinite, typename B, typename D>
void gather_standard(const B* bp, const D* dp, const double* rel, size_t n, const PassParams& p,
                     Sums& s) {
  const double eps = p.eps, maxv = p.maxv;
  double l2_num = s.l2_num, l2_den = s.l2_den;
  for (size_t i = 0; i < n; ++i) {
    const double b = static_cast<double>(bp[i]), d = static_cast<double>(dp[i]);
    const double a = std::fabs(d - b), ab = std::fabs(b), r = rel[i];
    const double bd = in_device_dtype<T>(b);
    const bool finite =
        kAllFinite || (std::isfinite(d) && std::isfinite(bd) && std::fabs(bd) <= maxv);
    l2_num += finite ? a * a : 0.0;
    l2_den += finite ? b * b : 0.0;
    if constexpr (K == Kind::kBinary) {
      s.diff += !(b == d);
    } else if constexpr (K == Kind::kAbsolute) {
      if (!finite) {
        ++s.inf_nan;
        // Clipped to the dtype's range, both-NaN and within-rtol count as agreeing.
        const double bc = std::clamp(bd, -maxv, maxv);
        const double dc = std::clamp(d, -maxv, maxv);
        const bool ok =
            std::fabs(dc - bc) / (ab + eps) <= p.abs.rtol || (std::isnan(d) && std::isnan(bc));
        s.inf_nan_bad += !ok;
      } else if (ab <= p.abs.small_value) {
        ++s.small;
        s.small_bad += a > p.abs.small_value_atol;
      } else {
        ++s.normal;
        s.normal_bad += r > p.abs.rtol;
      }
    } else if constexpr (K == Kind::kUlp) {
      const double u = ulp_error(b, d, p);
      if (std::isnan(u))
        s.ulp_max = u;
      else if (!std::isnan(s.ulp_max) && u > s.ulp_max)
        s.ulp_max = u;
      s.ulp_sum += u;
      s.ulp_over += u > p.ulp_threshold;
    } else {
      const bool is_small = finite && ab <= p.small.small_value;
      s.small += is_small;
      s.small_bad += is_small && a > p.small.small_value_atol;
      if (is_small || !finite) {
        ++s.masked;
      } else {
        s.sq += a * a;
        s.rel_nan |= std::isnan(r);
        s.rel_max = std::max(s.rel_max, r);
        s.rel_sum += r;
        ++s.rel_n;
      }
      const double diff = d - bd;
      s.larger += diff > 0;
      s.smaller += diff < 0;
    }
  }
  s.l2_num = l2_num, s.l2_den = l2_den;
}

template <Kind K, AccDtype T, typename B, typename D>
Sums gather(const Views<B, D>& v, const PassParams& p) {
  Sums s;
  double rel[kBlock];
  for (size_t at = 0; at < v.n; at += kBlock) {
    const B* bp = v.b + at;
    const D* dp = v.d + at;
    const size_t n = std::min(kBlock, v.n - at);
    const double bmax_before = s.bmax;
    s.bmax = 0;
    const bool nonfinite = gather_cascade(bp, dp, n, p.eps, rel, s);
    const bool in_range = s.bmax <= p.maxv;  // |bench| <= max: so is it rounded to the dtype
    s.bmax = std::max(bmax_before, s.bmax);
    if constexpr (K != Kind::kCascade) {
      if (!nonfinite && in_range)
        gather_standard<K, T, true>(bp, dp, rel, n, p, s);
      else
        gather_standard<K, T, false>(bp, dp, rel, n, p, s);
    }
  }
  return s;
}

template <Kind K, typename B, typename D>
Sums gather(const Views<B, D>& v, const PassParams& p) {
  // float32 and bfloat16 outputs both compare the bench rounded to float32 (bf16 outputs are
  // widened to float32 on both sides, as msprobe does); float64 outputs take the cascade only.
  if (p.dt == AccDtype::kFloat16) return gather<K, AccDtype::kFloat16>(v, p);
  return gather<K, AccDtype::kFloat32>(v, p);
}

template <typename B, typename D>
Sums gather(Kind k, const Views<B, D>& v, const PassParams& p) {
  switch (k) {
    case Kind::kCascade:
      return gather<Kind::kCascade>(v, p);
    case Kind::kBinary:
      return gather<Kind::kBinary>(v, p);
    case Kind::kAbsolute:
      return gather<Kind::kAbsolute>(v, p);
    case Kind::kUlp:
      return gather<Kind::kUlp>(v, p);
    case Kind::kBenchmark:
      break;
  }
  return gather<Kind::kBenchmark>(v, p);
}

// msprobe's cosine_sim: each side scaled by its max |x| first. Returns unset for blank cells.
// The pass summed the unscaled products; scaling by the maxima changes them only by rounding
// unless they overflowed or underflowed, in which case the scaled sums are taken (a second pass).
template <typename B, typename D>
std::optional<double> cosine(const Views<B, D>& v, const Sums& s, bool& ok, std::string& msg) {
  ok = true;
  if (v.n == 1) {
    msg +=
        "All the data in device dump data is scalar. Please refer to other compare algorithms.\n";
    return std::nullopt;
  }
  const double nmax = s.dmax, bmax = s.bmax;
  const bool nan = s.nan;
  if (!nan && nmax <= kDoubleEps && bmax <= kDoubleEps) {
    msg += "All the data in device and bench outputs are zero.\n";
    return std::nullopt;
  }
  if (!nan && nmax <= kDoubleEps) {
    ok = false;
    msg += "All the data is zero in device dump data.\n";
    return std::nullopt;
  }
  if (!nan && bmax <= kDoubleEps) {
    ok = false;
    msg += "All the data is zero in bench dump data.\n";
    return std::nullopt;
  }
  double c;
  constexpr double kTiny = 1e-280;  // far from underflow for the products of the sums
  if (nan || (std::isfinite(s.dot) && std::isfinite(s.dd) && std::isfinite(s.bb) && s.dd > kTiny &&
              s.bb > kTiny)) {
    c = s.dot / (std::sqrt(s.dd) * std::sqrt(s.bb));
  } else {
    double dot = 0, nn = 0, bb = 0;
    for (size_t i = 0; i < v.n; ++i) {
      const double x = static_cast<double>(v.d[i]) / nmax, y = static_cast<double>(v.b[i]) / bmax;
      dot += x * y;
      nn += x * x;
      bb += y * y;
    }
    c = dot / (std::sqrt(nn) * std::sqrt(bb));
  }
  if (std::isnan(c)) {
    msg += "Dump data has NaN when comparing with Cosine Similarity.\n";
    ok = false;
    return c;
  }
  c = std::clamp(c, -1.0, 1.0);
  ok = c > 0.99;
  return c;
}

template <typename Fail>
AccStatus element_verdict(AccStandard s, AccDtype dt, AccColumns& c, Fail fail) {
  switch (s) {
    case AccStandard::kAbsoluteThreshold:
      if (c.inf_nan_error_ratio.value_or(0) > 0)
        return fail("inf/nan error ratio " + fmt(*c.inf_nan_error_ratio) + " > 0");
      if (c.rel_err_ratio.value_or(0) > 0)
        return fail("relative error ratio " + fmt(*c.rel_err_ratio) + " > 0");
      if (c.abs_err_ratio.value_or(0) > 0)
        return fail("small-value absolute error ratio " + fmt(*c.abs_err_ratio) + " > 0");
      return AccStatus::kPass;
    case AccStandard::kBinary:
      if (c.error_rate.value_or(0) > 0)
        return fail("binary consistency error rate " + fmt(*c.error_rate) + " > 0");
      return AccStatus::kPass;
    case AccStandard::kUlp: {
      if (!c.mean_ulp_error) return AccStatus::kPass;
      const double prop = c.ulp_error_proportion.value_or(0);
      if (dt == AccDtype::kFloat32) {
        if (*c.mean_ulp_error < 64 || prop < 0.05) return AccStatus::kPass;
        return fail("mean ULP error " + fmt(*c.mean_ulp_error) + " >= 64 and share over 32 ULP " +
                    fmt(prop) + " >= 0.05");
      }
      if (prop < 0.001) return AccStatus::kPass;
      return fail("share of elements over 1 ULP " + fmt(prop) + " >= 0.001");
    }
    case AccStandard::kThousandth:
      if (c.rel_err_thousandth && *c.rel_err_thousandth < 0.999)
        return fail("share with relative error < 0.001 is " + fmt(*c.rel_err_thousandth) +
                    " < 0.999");
      return AccStatus::kPass;
    case AccStandard::kBenchmark:
      break;
  }
  return AccStatus::kPass;
}

AccStatus relative_l2_verdict(AccDtype dt, AccColumns& c) {
  if (!c.rel_l2) return AccStatus::kPass;
  const double bound = dt == AccDtype::kFloat32    ? std::ldexp(1.0, -16)
                       : dt == AccDtype::kFloat16  ? std::ldexp(1.0, -8)
                       : dt == AccDtype::kBFloat16 ? std::ldexp(1.0, -5)
                                                   : std::numeric_limits<double>::infinity();
  if (*c.rel_l2 > bound) {
    c.message += "numprobe relative L2 error " + fmt(*c.rel_l2) + " > " + fmt(bound) + " for " +
                 c.device_dtype + ".\n";
    return AccStatus::kError;
  }
  return AccStatus::kPass;
}

// The standard's own verdict where it needs no second device run (msprobe's
// api_precision_compare rules without the GPU-ratio alternatives): a binary mismatch is an
// error; the element-wise absolute-threshold, ULP and thousandth rules only warn, because a
// correct float32 op fails them where its result cancels (p + alpha * g, a reduction summing to
// near zero). Then, for every standard, numprobe's relative L2 bound, which cancellation cannot
// fool: exceeding it is an error.
AccStatus standard_verdict(AccStandard s, AccDtype dt, AccColumns& c) {
  const AccStatus severity = s == AccStandard::kBinary ? AccStatus::kError : AccStatus::kWarning;
  auto fail = [&](const std::string& why) {
    c.message += std::string("numprobe ") + acc_standard_name(s) + " standard: " + why + ".\n";
    return severity;
  };
  const AccStatus own = element_verdict(s, dt, c, fail);
  return acc_worse(own, relative_l2_verdict(dt, c));
}

std::string numpy_name(std::string_view torch_dtype) {
  if (torch_dtype.substr(0, 6) == "torch.") torch_dtype.remove_prefix(6);
  return std::string(torch_dtype);
}

Kind kind_for(AccStandard standard, bool benchmark_dtype) {
  if (!benchmark_dtype) return Kind::kCascade;
  switch (standard) {
    case AccStandard::kBinary:
      return Kind::kBinary;
    case AccStandard::kAbsoluteThreshold:
      return Kind::kAbsolute;
    case AccStandard::kUlp:
      return Kind::kUlp;
    case AccStandard::kBenchmark:
    case AccStandard::kThousandth:
      break;
  }
  return Kind::kBenchmark;
}

// The columns and verdicts of one float output from its gathered sums.
template <typename B, typename D>
void float_metrics(AccStandard standard, const Views<B, D>& v, const PassParams& p, Kind kind,
                   const Sums& s, AccColumns& c) {
  const AccDtype dt = p.dt;
  const size_t n_elems = v.n;
  if (standard == AccStandard::kThousandth)
    c.rel_err_thousandth = rel_err_ratio(s.below3, n_elems, 1e-3).value;

  const bool benchmark_dtype = kind != Kind::kCascade;
  auto share = [](size_t part, size_t all) {
    return all ? static_cast<double>(part) / static_cast<double>(all) : 0.0;
  };
  if (kind == Kind::kBinary) {
    c.error_rate = share(s.diff, n_elems);
  } else if (kind == Kind::kAbsolute) {
    c.inf_nan_error_ratio = share(s.inf_nan_bad, s.inf_nan);
    c.rel_err_ratio = share(s.normal_bad, s.normal);
    c.abs_err_ratio = share(s.small_bad, s.small);
  } else if (kind == Kind::kUlp) {
    if (n_elems == 0) {
      c.max_ulp_error = c.mean_ulp_error = c.ulp_error_proportion = 0.0;
    } else {
      c.max_ulp_error = s.ulp_max;
      c.mean_ulp_error = s.ulp_sum / static_cast<double>(n_elems);
      c.ulp_error_proportion = share(s.ulp_over, n_elems);
    }
  } else if (kind == Kind::kBenchmark) {
    if (n_elems == 0) {
      c.status = AccStatus::kError;
      c.message += "Relative error result list is empty.";
      return;
    }
    const double n = static_cast<double>(n_elems);
    c.small_value_err_ratio = share(s.small_bad, s.small);
    // msprobe's masked RMSE: mean over all elements, rescaled for the masked count.
    const double mse = s.sq / n * (n / (n - static_cast<double>(s.masked) + 0.0001) + 0.0001);
    c.rmse = std::sqrt(mse);
    c.eb = std::fabs(static_cast<double>(s.larger) - static_cast<double>(s.smaller)) / n;
    c.max_rel_err = s.rel_nan ? std::nan("") : (s.rel_max >= 0 ? s.rel_max : 0.0);
    c.mean_rel_err = s.rel_n ? s.rel_sum / static_cast<double>(s.rel_n) : 0.0;
  }
  if (benchmark_dtype)
    c.rel_l2 = s.l2_den > 0 ? std::sqrt(s.l2_num / s.l2_den) : (s.l2_num > 0 ? HUGE_VAL : 0.0);

  // msprobe's single-run cascade.
  bool cos_ok = true;
  if (n_elems == 0) {
    c.message += "This is empty data, can not compare.\n";
  } else {
    c.cosine = cosine(v, s, cos_ok, c.message);
  }
  AccStatus cascade = AccStatus::kPass;
  if (!cos_ok) {
    c.message += "Cosine similarity is less than 0.99, consider as error.\n";
    cascade = AccStatus::kError;
  } else if (n_elems > 0) {
    const double mx = s.abs_nan ? std::nan("") : s.max_abs;
    c.max_abs_err = mx;
    const bool half = dt == AccDtype::kFloat16 || dt == AccDtype::kBFloat16;
    if (mx < 0.001) {
      c.message += "Max abs error is less than 0.001, consider as pass.\n";
    } else if (half) {
      const Ratio hundred = rel_err_ratio(s.below2, n_elems, 1e-2);
      c.rel_err_hundredth = hundred.value;
      if (!hundred.ok) {
        c.message += "Relative error is greater than 0.01, consider as error.\n";
        cascade = AccStatus::kError;
      } else {
        const Ratio thousand = rel_err_ratio(s.below3, n_elems, 1e-3);
        c.rel_err_thousandth = thousand.value;
        if (!thousand.ok) {
          c.message += "Relative error is greater than 0.001, consider as warning.\n";
          cascade = AccStatus::kWarning;
        }
      }
    } else {
      const Ratio thousand = rel_err_ratio(s.below3, n_elems, 1e-3);
      const Ratio ten_thousand = rel_err_ratio(s.below4, n_elems, 1e-4);
      c.rel_err_thousandth = thousand.value;
      c.rel_err_ten_thousandth = ten_thousand.value;
      if (!thousand.ok) {
        c.message += "Relative error is greater than 0.001, consider as error.\n";
        cascade = AccStatus::kError;
      } else if (!ten_thousand.ok) {
        c.message += "Relative error is greater than 0.0001, consider as warning.\n";
        cascade = AccStatus::kWarning;
      }
    }
  }
  c.status = benchmark_dtype ? acc_worse(cascade, standard_verdict(standard, dt, c)) : cascade;
}

// One float output. Beyond msprobe: NaN/Inf the reference has at the same places (log of a
// negative input, a -inf mask) are agreement, not an error; the metrics cover the finite rest.
// Only an output with a non-finite element pays the extra scan (and the filtered copy).
template <typename B, typename D>
void compare_float(std::string_view op, const Views<B, D>& v, AccDtype dt, double eps,
                   AccColumns& c) {
  const AccStandard standard = acc_standard_for(op);
  const bool benchmark_dtype =
      dt == AccDtype::kFloat16 || dt == AccDtype::kBFloat16 || dt == AccDtype::kFloat32;
  const Kind kind = kind_for(standard, benchmark_dtype);
  const PassParams p = pass_params(dt, eps);
  const Sums s = gather(kind, v, p);
  if (s.nonfinite) {
    size_t agreeing = 0;
    bool disagree = false;
    for (size_t i = 0; i < v.n && !disagree; ++i) {
      const double b = v.b[i], d = v.d[i];
      if (std::isfinite(b) && std::isfinite(d)) continue;
      const bool same = (std::isnan(b) && std::isnan(d)) || b == d;
      disagree = !same;
      agreeing += same;
    }
    if (!disagree && agreeing > 0) {
      std::vector<double> fb, fd;
      fb.reserve(v.n - agreeing);
      fd.reserve(v.n - agreeing);
      for (size_t i = 0; i < v.n; ++i) {
        const double b = v.b[i], d = v.d[i];
        if (!std::isfinite(b) || !std::isfinite(d)) continue;
        fb.push_back(b);
        fd.push_back(d);
      }
      c.message += std::to_string(agreeing) +
                   " inf/nan elements are the same on both sides and left out of the metrics.\n";
      if (fb.empty()) {
        c.status = AccStatus::kPass;
        return;
      }
      const Views<double, double> w{fb.data(), fd.data(), fb.size()};
      float_metrics(standard, w, p, kind, gather(kind, w, p), c);
      return;
    }
  }
  float_metrics(standard, v, p, kind, s, c);
}

template <typename B, typename D>
void compare_views(std::string_view op, const Views<B, D>& v, bool is_float_dt, AccDtype dt,
                   double eps, const std::string& bench_dtype, AccColumns& c) {
  if (is_float_dt) {
    compare_float(op, v, dt, eps, c);
    if (c.rel_l2) c.message += "relative L2 error " + fmt(*c.rel_l2) + ".\n";
    return;
  }
  c.message = "Compare algorithm is not supported for " + numpy_name(bench_dtype) +
              " data. Only judged by Error Rate.";
  if (v.n == 0) {
    c.error_rate = std::nan("");
    c.status = AccStatus::kError;
    c.message += "There is not bench calculation result.\n";
    return;
  }
  size_t diff = 0;
  for (size_t i = 0; i < v.n; ++i) diff += !(static_cast<double>(v.b[i]) == v.d[i]);
  c.error_rate = static_cast<double>(diff) / static_cast<double>(v.n);
  c.status = diff == 0 ? AccStatus::kPass : AccStatus::kError;
  c.message += "\n";
}

}  // namespace

const char* acc_status_name(AccStatus s) {
  switch (s) {
    case AccStatus::kPass:
      return "pass";
    case AccStatus::kWarning:
      return "warning";
    case AccStatus::kError:
      return "error";
    case AccStatus::kSkip:
      return "SKIP";
    case AccStatus::kNone:
      break;
  }
  return " ";
}

AccStatus acc_worse(AccStatus a, AccStatus b) {
  auto rank = [](AccStatus s) {
    switch (s) {
      case AccStatus::kError:
        return 4;
      case AccStatus::kWarning:
        return 3;
      case AccStatus::kPass:
        return 2;
      case AccStatus::kSkip:
        return 1;
      case AccStatus::kNone:
        break;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

AccDtype acc_dtype_from_name(std::string_view name) {
  const DType t = dtype_from_name(name);
  switch (t) {
    case DType::kF16:
      return AccDtype::kFloat16;
    case DType::kBF16:
      return AccDtype::kBFloat16;
    case DType::kF32:
      return AccDtype::kFloat32;
    case DType::kF64:
      return AccDtype::kFloat64;
    case DType::kBool:
      return AccDtype::kBool;
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
      return AccDtype::kInteger;
    default:
      return AccDtype::kOther;
  }
}

AccColumns acc_unusable_output(AccStatus status, std::string message) {
  AccColumns c;
  c.status = status;
  c.message = std::move(message);
  return c;
}

AccColumns acc_compare_output(std::string_view op, const AccTensorView& bench,
                              const AccTensorView& device, std::string shape) {
  AccColumns c;
  c.bench_dtype = bench.dtype;
  c.device_dtype = device.dtype;
  c.shape = std::move(shape);
  if (bench.n != device.n) {
    c.status = AccStatus::kError;
    c.message = "The shape of bench and npu not equal.";
    return c;
  }
  const AccDtype bt = acc_dtype_from_name(bench.dtype), dt = acc_dtype_from_name(device.dtype);
  auto is_float = [](AccDtype d) {
    return d == AccDtype::kFloat16 || d == AccDtype::kBFloat16 || d == AccDtype::kFloat32 ||
           d == AccDtype::kFloat64;
  };
  if (is_float(bt) != is_float(dt) || (bt == AccDtype::kBool) != (dt == AccDtype::kBool) ||
      bt == AccDtype::kOther || dt == AccDtype::kOther) {
    c.status = AccStatus::kError;
    c.message = "Bench out dtype is " + numpy_name(bench.dtype) + " but npu output dtype is " +
                numpy_name(device.dtype) + ", cannot compare.";
    return c;
  }
  const size_t n = bench.n;
  const bool fl = is_float(dt);
  const double eps = fl ? bench_eps(dt, bench.dtype) : 0.0;
  if (bench.f32 && device.f32)
    compare_views(op, Views<float, float>{bench.f32, device.f32, n}, fl, dt, eps, bench.dtype, c);
  else if (bench.f32)
    compare_views(op, Views<float, double>{bench.f32, device.f64, n}, fl, dt, eps, bench.dtype, c);
  else if (device.f32)
    compare_views(op, Views<double, float>{bench.f64, device.f32, n}, fl, dt, eps, bench.dtype, c);
  else
    compare_views(op, Views<double, double>{bench.f64, device.f64, n}, fl, dt, eps, bench.dtype, c);
  return c;
}

std::string acc_format_number(const std::optional<double>& v, int precision) {
  if (!v) return " ";
  if (std::isnan(*v)) return "nan";
  if (std::isinf(*v)) return *v > 0 ? "inf" : "-inf";
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", precision, *v);
  return buf;
}

}  // namespace numprobe
