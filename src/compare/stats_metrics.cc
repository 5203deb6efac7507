#include <cmath>

#include "numprobe/compare/stats_metrics.h"

namespace numprobe {
namespace {

constexpr double kMagnitude = 0.5;
constexpr double kEpsilon = 1e-10;

StatDiff diff_of(const StatValue& t, const StatValue& g) {
  StatDiff d;
  if (!t.has_number() || !g.has_number()) return d;  // bools and nulls have no difference
  d.has_diff = true;
  d.diff = t.v - g.v;
  if (g.v != 0 && !std::isnan(d.diff)) {
    d.has_rel = true;
    d.rel_percent = std::fabs(d.diff / g.v) * 100.0;
  }
  return d;
}

bool numeric(const StatValue& s) {
  return s.has_number();
}

}  // namespace

StatisticsMetrics statistics_metrics(const CompareRow& target, const CompareRow& golden) {
  StatisticsMetrics m;
  m.max = diff_of(target.max, golden.max);
  m.min = diff_of(target.min, golden.min);
  m.mean = diff_of(target.mean, golden.mean);
  m.norm = diff_of(target.norm, golden.norm);
  const StatValue* ts[] = {&target.max, &target.min, &target.mean, &target.norm};
  const StatValue* gs[] = {&golden.max, &golden.min, &golden.mean, &golden.norm};
  for (int i = 0; i < 4; ++i) {
    if (!numeric(*ts[i]) || !numeric(*gs[i])) continue;
    const double t = ts[i]->v, g = gs[i]->v;
    const bool tf = std::isfinite(t), gf = std::isfinite(g);
    if (!tf || !gf) {
      // Same non-finite value on both sides (inf == inf, or both NaN) is agreement.
      bool same = (std::isnan(t) && std::isnan(g)) || t == g;
      if (!same) {
        m.warning = true;
        m.reason = "nan_inf_mismatch";
      }
      continue;
    }
    const double scale = std::fmax(std::fabs(t), std::fabs(g)) + kEpsilon;
    if (std::fabs(t - g) / scale > kMagnitude && m.reason.empty()) {
      m.warning = true;
      m.reason = "magnitude";
    }
  }
  return m;
}

const char* md5_result(const CompareRow& target, const CompareRow& golden) {
  return target.md5 == golden.md5 ? "pass" : "Different";
}

}  // namespace numprobe
