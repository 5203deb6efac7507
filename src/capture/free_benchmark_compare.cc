#include "capture/free_benchmark_compare.h"

#include <algorithm>
#include <cmath>

namespace numprobe::capture {

double perturbation_ratio(const double* original, const double* perturbed, size_t n,
                          double abs_tol) {
  double ratio = 1.0;
  for (size_t i = 0; i < n; ++i) {
    const double o = original[i], p = perturbed[i];
    if (!std::isfinite(o) || !std::isfinite(p)) continue;
    const double ao = std::fabs(o), ap = std::fabs(p);
    if (ap > abs_tol) ratio = std::max(ratio, ao / (ap + abs_tol));
    if (ao > abs_tol) ratio = std::max(ratio, ap / (ao + abs_tol));
  }
  return ratio;
}

BenchmarkErrors benchmark_errors(const double* actual, const double* golden, size_t n,
                                 double small_value) {
  BenchmarkErrors e;
  double balance_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(golden[i])) {
      e.golden_finite = false;
      return e;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const double a = std::isfinite(actual[i]) ? actual[i] : 1.0, g = golden[i];
    const double diff = a - g;
    if (std::fabs(a) < small_value) {
      e.max_abs_small = std::max(e.max_abs_small, std::fabs(diff));
    } else if (g != 0) {
      e.max_rel = std::max(e.max_rel, std::fabs(diff) / std::fabs(g));
    } else if (diff != 0) {
      e.max_rel = INFINITY;
    }
    balance_sum += diff / (std::fabs(g) >= small_value ? std::fabs(g) : 1.0);
  }
  if (n > 0) e.err_balance = balance_sum / static_cast<double>(n);
  return e;
}

}  // namespace numprobe::capture
