#include <algorithm>
#include <cmath>
#include <limits>

#include "compare/noise.h"
#include "numprobe/compare/tensor_metrics.h"

namespace numprobe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool numbers(const CompareRow& r) {
  return r.max.has_number() && r.min.has_number() && r.mean.has_number() && r.norm.has_number();
}

// Same value, or the same non-finite value: no difference.
bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

// Whether v is a float32 value (a sum computed in fp32 and widened).
bool fp32_value(double v) {
  return std::isfinite(v) && static_cast<double>(static_cast<float>(v)) == v;
}

// The relative Mean/Norm difference that summation alone explains for one tensor of n elements,
// from the precision each side summed in: a side whose Mean and Norm are both float32 values
// summed in fp32 (msprobe), the other in float64 (numprobe).
double summation_allowance(const CompareRow& t, const CompareRow& g, double n) {
  const bool t32 = fp32_value(t.mean.v) && fp32_value(t.norm.v);
  const bool g32 = fp32_value(g.mean.v) && fp32_value(g.norm.v);
  if (t32 != g32) return std::max(kStatisticsPrecision, std::sqrt(n) / (1 << 23));
  if (t32) return kStatisticsPrecision;  // two fp32 sums: their order may differ
  return kFloat64SumPrecision;           // two float64 sums: threads may split them differently
}

}  // namespace

double row_discrepancy(const CompareRow& t, const CompareRow& g) {
  const RowDiscrepancy d = row_discrepancy_parts(t, g);
  return std::max(d.extremes, d.sums);
}

RowDiscrepancy row_discrepancy_parts(const CompareRow& t, const CompareRow& g) {
  const RowDiscrepancy none{0, 0, 0}, all{kInf, kInf, 0};
  // A non-tensor argument against null (an object the dumper could not record): no evidence
  // either way. Cross-framework pairs meet it often (MindSpore's group name, PyTorch's
  // ProcessGroup). A tensor against null stays a difference.
  const bool t_none = t.kind == RowKind::kNone, g_none = g.kind == RowKind::kNone;
  if (t_none != g_none && (t_none ? g.kind : t.kind) != RowKind::kTensor) return none;
  if (t.kind != g.kind) return all;
  if (t.kind == RowKind::kScalar || t.kind == RowKind::kOther) return t.md5 == g.md5 ? none : all;
  if (t.kind != RowKind::kTensor) return none;
  if (t.shape != g.shape) return all;
  if (!numbers(t) || !numbers(g)) {
    // md5-only or stat-less leaves: bitwise.
    return t.md5 == g.md5 ? none : all;
  }
  const double tv[] = {t.max.v, t.min.v, t.mean.v, t.norm.v};
  const double gv[] = {g.max.v, g.min.v, g.mean.v, g.norm.v};
  for (int i = 0; i < 4; ++i) {
    if (same(tv[i], gv[i])) continue;
    if (!std::isfinite(tv[i]) || !std::isfinite(gv[i])) return all;
  }
  double n = 1;
  for (int64_t d : t.shape) n *= static_cast<double>(std::max<int64_t>(d, 1));
  const double magnitude =
      std::max({std::fabs(t.max.v), std::fabs(t.min.v), std::fabs(g.max.v), std::fabs(g.min.v)});
  const double norm = std::max(std::fabs(t.norm.v), std::fabs(g.norm.v));
  const double rms = norm / std::sqrt(n);
  auto rel = [](double a, double b, double scale) {
    if (same(a, b) || !std::isfinite(a) || !std::isfinite(b)) return 0.0;
    return scale > 0 ? std::fabs(a - b) / scale : kInf;
  };
  // Max and Min are elements, exact in every dumper. Mean and Norm are sums: msprobe sums fp32
  // tensors in fp32, numprobe in float64, so the same tensor's Mean/Norm may differ by a few fp32
  // ulps between the two tools (docs/msprobe_versions.md). Such a difference alone, with Max and
  // Min equal, is no evidence.
  const double extremes =
      std::max(rel(t.max.v, g.max.v, magnitude), rel(t.min.v, g.min.v, magnitude));
  // msprobe 26 writes a 0-d tensor's Norm as its value, sign kept (-45.2 for a sum of -45.2):
  // a one-element tensor's Norm is compared by magnitude.
  const bool one = n == 1;
  double sums = std::max(
      rel(t.mean.v, g.mean.v, rms),
      rel(one ? std::fabs(t.norm.v) : t.norm.v, one ? std::fabs(g.norm.v) : g.norm.v, norm));
  const double allowance = summation_allowance(t, g, n);
  if (extremes == 0 && sums <= allowance) sums = 0;
  return {extremes, sums, allowance};
}

double noise_tolerance(DType dtype) {
  const double floor = std::ldexp(1.0, -10);
  if (dtype == DType::kUnknown || !dtype_is_floating(dtype)) return floor;
  return std::max(floor, 8 * dtype_epsilon(dtype));
}

}  // namespace numprobe
