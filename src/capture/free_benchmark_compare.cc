#include "capture/free_benchmark_compare.h"

#include <algorithm>
#include <cmath>

namespace numprobe::capture {

namespace {

// Branch-free so that the compiler vectorises it (element type T, float32 math for float32
// outputs): a pair that does not count contributes 1. The running maxima are kept per lane
// (kLanes independent `x > m ? x : m`, element-wise hence SIMD, where one scalar maximum would be
// a reduction GCC keeps scalar without -ffast-math). A value is finite iff v - v == 0 (NaN and
// infinities give NaN), which compares false.
template <typename T>
T pair_ratio(T o, T p, T tol) {
  const T one = 1;
  const bool finite = (o - o == 0) & (p - p == 0);  // `&`: no short-circuit branch
  const T ao = finite ? std::fabs(o) : one, ap = finite ? std::fabs(p) : one;
  // both divisions unconditional (the divisors are > 0): a division under a condition is not
  // if-converted, and the loop would stay scalar
  const T q1 = ao / (ap + tol), q2 = ap / (ao + tol);
  const T r1 = ap > tol ? q1 : one, r2 = ao > tol ? q2 : one;
  return r1 > r2 ? r1 : r2;
}

template <typename T>
double ratio_of(const T* original, const T* perturbed, size_t n, double abs_tol) {
  constexpr size_t kLanes = 16;
  const T tol = static_cast<T>(abs_tol);
  T lanes[kLanes];
  for (T& l : lanes) l = 1;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const T r = pair_ratio(original[i + j], perturbed[i + j], tol);
      lanes[j] = r > lanes[j] ? r : lanes[j];
    }
  }
  T ratio = 1;
  for (T l : lanes) ratio = l > ratio ? l : ratio;
  for (; i < n; ++i) {
    const T r = pair_ratio(original[i], perturbed[i], tol);
    ratio = r > ratio ? r : ratio;
  }
  return static_cast<double>(ratio);
}

}  // namespace

double perturbation_ratio(const double* original, const double* perturbed, size_t n,
                          double abs_tol) {
  return ratio_of(original, perturbed, n, abs_tol);
}

double perturbation_ratio(const float* original, const float* perturbed, size_t n, double abs_tol) {
  return ratio_of(original, perturbed, n, abs_tol);
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
