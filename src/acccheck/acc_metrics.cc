// Per-output metrics of acc-check with msprobe's definitions (its api_accuracy_checker compare and
// algorithm modules), computed in float64, plus the standards' absolute verdicts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "acccheck/acc_internal.h"
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

// bench.astype(device dtype) as msprobe does before some comparisons. bf16 outputs were already
// widened to float32 on both sides, as msprobe does.
double to_device_dtype(AccDtype d, double v) {
  switch (d) {
    case AccDtype::kFloat16:
      return half_to_float(float_to_half(static_cast<float>(v)));
    case AccDtype::kFloat32:
    case AccDtype::kBFloat16:
      return static_cast<double>(static_cast<float>(v));
    default:
      return v;
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

struct Views {
  const double* b;
  const double* d;
  size_t n;
};

// msprobe's cosine_sim: each side scaled by its max |x| first. Returns unset for blank cells.
std::optional<double> cosine(const Views& v, bool& ok, std::string& msg) {
  ok = true;
  if (v.n == 1) {
    msg +=
        "All the data in device dump data is scalar. Please refer to other compare algorithms.\n";
    return std::nullopt;
  }
  double nmax = 0, bmax = 0;
  bool nan = false;
  for (size_t i = 0; i < v.n; ++i) {
    if (std::isnan(v.d[i]) || std::isnan(v.b[i])) nan = true;
    nmax = std::max(nmax, std::fabs(v.d[i]));
    bmax = std::max(bmax, std::fabs(v.b[i]));
  }
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
  double dot = 0, nn = 0, bb = 0;
  for (size_t i = 0; i < v.n; ++i) {
    const double x = v.d[i] / nmax, y = v.b[i] / bmax;
    dot += x * y;
    nn += x * x;
    bb += y * y;
  }
  double c = dot / (std::sqrt(nn) * std::sqrt(bb));
  if (std::isnan(c)) {
    msg += "Dump data has NaN when comparing with Cosine Similarity.\n";
    ok = false;
    return c;
  }
  c = std::clamp(c, -1.0, 1.0);
  ok = c > 0.99;
  return c;
}

// ULP error per msprobe: (device - bench) * 2^(mantissa_bits - eb), eb = max(floor(log2|bench|),
// min_eb); float32 outputs in float64 arithmetic, narrower ones in float32 like msprobe.
void ulp_metrics(const Views& v, AccDtype dt, AccColumns& c) {
  if (v.n == 0) {
    c.max_ulp_error = c.mean_ulp_error = c.ulp_error_proportion = 0.0;
    return;
  }
  const bool f32 = dt == AccDtype::kFloat32;
  const int min_eb = dt == AccDtype::kFloat16 ? -14 : -126;
  const int mant = dt == AccDtype::kFloat16 ? 10 : (dt == AccDtype::kBFloat16 ? 7 : 23);
  const double threshold = f32 ? 32.0 : 1.0;
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  size_t over = 0;
  for (size_t i = 0; i < v.n; ++i) {
    const double ab = std::fabs(v.b[i]);
    double eb = ab == 0 ? 0.0 : std::floor(std::log2(ab));
    eb = std::max(eb, static_cast<double>(min_eb));
    double u;
    if (f32) {
      u = (v.d[i] - v.b[i]) * std::exp2(-eb + mant);
    } else {
      const float diff = static_cast<float>(v.d[i]) - static_cast<float>(v.b[i]);
      u = static_cast<double>(diff * static_cast<float>(std::exp2(-eb + mant)));
    }
    u = std::fabs(u);
    if (std::isnan(u))
      mx = u;
    else if (!std::isnan(mx) && u > mx)
      mx = u;
    sum += u;
    over += u > threshold;
  }
  c.max_ulp_error = mx;
  c.mean_ulp_error = sum / static_cast<double>(v.n);
  c.ulp_error_proportion = static_cast<double>(over) / static_cast<double>(v.n);
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

void float_metrics(std::string_view op, const Views& v, AccDtype dt, double eps, AccColumns& c) {
  const AccStandard standard = acc_standard_for(op);
  // Element errors are recomputed where needed instead of stored: outputs reach 1M elements and
  // every pass over memory counts more than the arithmetic.
  auto abs_err = [&](size_t i) { return std::fabs(v.d[i] - v.b[i]); };
  auto rel_origin = [&](size_t i) { return abs_err(i) / (std::fabs(v.b[i]) + eps); };
  size_t below2 = 0, below3 = 0, below4 = 0;
  double max_abs = 0;
  for (size_t i = 0; i < v.n; ++i) {
    const double a = abs_err(i), r = a / (std::fabs(v.b[i]) + eps);
    below2 += r < 1e-2;
    below3 += r < 1e-3;
    below4 += r < 1e-4;
    max_abs = std::isnan(a) || std::isnan(max_abs) ? std::nan("") : std::max(max_abs, a);
  }
  if (standard == AccStandard::kThousandth)
    c.rel_err_thousandth = rel_err_ratio(below3, v.n, 1e-3).value;

  const bool benchmark_dtype =
      dt == AccDtype::kFloat16 || dt == AccDtype::kBFloat16 || dt == AccDtype::kFloat32;
  if (benchmark_dtype) {
    const double maxv = dtype_max(dt);
    std::vector<uint8_t> finite(v.n);
    for (size_t i = 0; i < v.n; ++i) {
      const double bd = to_device_dtype(dt, v.b[i]);
      finite[i] = std::isfinite(v.d[i]) && std::isfinite(bd) && std::fabs(bd) <= maxv;
    }
    if (standard == AccStandard::kBinary) {
      size_t diff = 0;
      for (size_t i = 0; i < v.n; ++i) diff += !(v.b[i] == v.d[i]);
      c.error_rate = v.n ? static_cast<double>(diff) / static_cast<double>(v.n) : 0.0;
    } else if (standard == AccStandard::kAbsoluteThreshold) {
      const AbsoluteThresholds t = absolute_thresholds(dt);
      size_t inf_nan = 0, inf_nan_bad = 0, small = 0, small_bad = 0, normal = 0, normal_bad = 0;
      for (size_t i = 0; i < v.n; ++i) {
        const double ab = std::fabs(v.b[i]);
        if (!finite[i]) {
          ++inf_nan;
          // Clipped to the dtype's range, both-NaN and within-rtol count as agreeing.
          const double bc = std::clamp(to_device_dtype(dt, v.b[i]), -maxv, maxv);
          const double dc = std::clamp(v.d[i], -maxv, maxv);
          const bool ok =
              std::fabs(dc - bc) / (ab + eps) <= t.rtol || (std::isnan(v.d[i]) && std::isnan(bc));
          inf_nan_bad += !ok;
        } else if (ab <= t.small_value) {
          ++small;
          small_bad += abs_err(i) > t.small_value_atol;
        } else {
          ++normal;
          normal_bad += rel_origin(i) > t.rtol;
        }
      }
      auto share = [](size_t bad, size_t all) {
        return all ? static_cast<double>(bad) / static_cast<double>(all) : 0.0;
      };
      c.inf_nan_error_ratio = share(inf_nan_bad, inf_nan);
      c.rel_err_ratio = share(normal_bad, normal);
      c.abs_err_ratio = share(small_bad, small);
    } else if (standard == AccStandard::kUlp) {
      ulp_metrics(v, dt, c);
    } else {
      const SmallValueConfig cfg = small_value_config(dt);
      size_t small = 0, small_bad = 0, masked = 0, larger = 0, smaller = 0, rel_n = 0;
      double sq = 0, rel_max = -1, rel_sum = 0;
      for (size_t i = 0; i < v.n; ++i) {
        const bool is_small = finite[i] && std::fabs(v.b[i]) <= cfg.small_value;
        small += is_small;
        small_bad += is_small && abs_err(i) > cfg.small_value_atol;
        const bool mask = is_small || !finite[i];
        masked += mask;
        if (!mask) {
          sq += abs_err(i) * abs_err(i);
          const double r = rel_origin(i);
          rel_max = std::isnan(r) || std::isnan(rel_max) ? std::nan("") : std::max(rel_max, r);
          rel_sum += r;
          ++rel_n;
        }
        const double diff = v.d[i] - to_device_dtype(dt, v.b[i]);
        larger += diff > 0;
        smaller += diff < 0;
      }
      if (v.n == 0) {
        c.status = AccStatus::kError;
        c.message += "Relative error result list is empty.";
        return;
      }
      const double n = static_cast<double>(v.n);
      c.small_value_err_ratio = small ? static_cast<double>(small_bad) / small : 0.0;
      // msprobe's masked RMSE: mean over all elements, rescaled for the masked count.
      const double mse = sq / n * (n / (n - masked + 0.0001) + 0.0001);
      c.rmse = std::sqrt(mse);
      c.eb = std::fabs(static_cast<double>(larger) - static_cast<double>(smaller)) / n;
      c.max_rel_err = rel_max >= 0 || std::isnan(rel_max) ? rel_max : 0.0;
      c.mean_rel_err = rel_n ? rel_sum / static_cast<double>(rel_n) : 0.0;
    }
    // numprobe's relative L2 error over the elements both sides have finite.
    double num = 0, den = 0;
    for (size_t i = 0; i < v.n; ++i) {
      if (!finite[i]) continue;
      num += abs_err(i) * abs_err(i);
      den += v.b[i] * v.b[i];
    }
    c.rel_l2 = den > 0 ? std::sqrt(num / den) : (num > 0 ? HUGE_VAL : 0.0);
  }

  // msprobe's single-run cascade.
  bool cos_ok = true;
  if (v.n == 0) {
    c.message += "This is empty data, can not compare.\n";
  } else {
    c.cosine = cosine(v, cos_ok, c.message);
  }
  AccStatus cascade = AccStatus::kPass;
  if (!cos_ok) {
    c.message += "Cosine similarity is less than 0.99, consider as error.\n";
    cascade = AccStatus::kError;
  } else if (v.n > 0) {
    const double mx = max_abs;
    c.max_abs_err = mx;
    const bool half = dt == AccDtype::kFloat16 || dt == AccDtype::kBFloat16;
    if (mx < 0.001) {
      c.message += "Max abs error is less than 0.001, consider as pass.\n";
    } else if (half) {
      const Ratio hundred = rel_err_ratio(below2, v.n, 1e-2);
      c.rel_err_hundredth = hundred.value;
      if (!hundred.ok) {
        c.message += "Relative error is greater than 0.01, consider as error.\n";
        cascade = AccStatus::kError;
      } else {
        const Ratio thousand = rel_err_ratio(below3, v.n, 1e-3);
        c.rel_err_thousandth = thousand.value;
        if (!thousand.ok) {
          c.message += "Relative error is greater than 0.001, consider as warning.\n";
          cascade = AccStatus::kWarning;
        }
      }
    } else {
      const Ratio thousand = rel_err_ratio(below3, v.n, 1e-3);
      const Ratio ten_thousand = rel_err_ratio(below4, v.n, 1e-4);
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

std::string numpy_name(std::string_view torch_dtype) {
  if (torch_dtype.substr(0, 6) == "torch.") torch_dtype.remove_prefix(6);
  return std::string(torch_dtype);
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
  Views v{bench.data, device.data, bench.n};
  // Beyond msprobe: NaN/Inf the reference has at the same places (log of a negative input, a
  // -inf mask) are agreement, not an error; the metrics cover the finite rest.
  std::vector<double> fb, fd;
  size_t agreeing = 0;
  bool disagree = false;
  for (size_t i = 0; i < v.n && !disagree; ++i) {
    if (std::isfinite(v.b[i]) && std::isfinite(v.d[i])) continue;
    const bool same = (std::isnan(v.b[i]) && std::isnan(v.d[i])) || v.b[i] == v.d[i];
    disagree = !same;
    agreeing += same;
  }
  if (is_float(dt) && !disagree && agreeing > 0) {
    for (size_t i = 0; i < v.n; ++i) {
      if (!std::isfinite(v.b[i]) || !std::isfinite(v.d[i])) continue;
      fb.push_back(v.b[i]);
      fd.push_back(v.d[i]);
    }
    v = Views{fb.data(), fd.data(), fb.size()};
    c.message += std::to_string(agreeing) +
                 " inf/nan elements are the same on both sides and left out of the metrics.\n";
    if (v.n == 0) {
      c.status = AccStatus::kPass;
      return c;
    }
  }
  if (!is_float(dt)) {
    c.message = "Compare algorithm is not supported for " + numpy_name(bench.dtype) +
                " data. Only judged by Error Rate.";
    if (v.n == 0) {
      c.error_rate = std::nan("");
      c.status = AccStatus::kError;
      c.message += "There is not bench calculation result.\n";
      return c;
    }
    size_t diff = 0;
    for (size_t i = 0; i < v.n; ++i) diff += !(v.b[i] == v.d[i]);
    c.error_rate = static_cast<double>(diff) / static_cast<double>(v.n);
    c.status = diff == 0 ? AccStatus::kPass : AccStatus::kError;
    c.message += "\n";
    return c;
  }
  float_metrics(op, v, dt, bench_eps(dt, bench.dtype), c);
  if (c.rel_l2) c.message += "relative L2 error " + fmt(*c.rel_l2) + ".\n";
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
