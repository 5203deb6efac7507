#include "capture/free_benchmark_compare.h"

#include <algorithm>
#include <cmath>

namespace numprobe::capture {

namespace {

// Branch-free so that the compiler vectorises it (element type T, float32 math for float32
// outputs): a pair that does not count contributes ratio 1 and product 0. The running maxima and
// minima are kept per lane (kLanes independent `x > m ? x : m`, element-wise hence SIMD, where one
// scalar maximum would be a reduction GCC keeps scalar without -ffast-math). A value is finite iff
// v - v == 0 (NaN and infinities give NaN), which compares false.
template <typename T>
void pair_terms(T o, T p, T tol, T& ratio, T& product) {
  const bool finite = (o - o == 0) & (p - p == 0);  // `&`: no short-circuit branch
  const T ao0 = std::fabs(o), ap0 = std::fabs(p);
  // both values raised to tol (msprobe's clamp); a non-finite pair becomes (tol, tol)
  const T ao = (ao0 > tol) & finite ? ao0 : tol, ap = (ap0 > tol) & finite ? ap0 : tol;
  // max(ao/ap, ap/ao) as one division (both > 0: no division under a condition)
  const T hi = ao > ap ? ao : ap, lo = ao > ap ? ap : ao;
  ratio = hi / lo;
  // The product where it is finite, else 0: a NaN or infinite value makes it NaN or infinite. A
  // product that overflows T is dropped too (a flip between two values beyond sqrt(T's max) goes
  // unseen); testing `finite` a second time instead keeps GCC from vectorising the loop.
  const T prod = o * p;
  product = prod - prod == 0 ? prod : T(0);
}

template <typename T>
PerturbationRatio ratio_of(const T* original, const T* perturbed, size_t n, double abs_tol) {
  constexpr size_t kLanes = 16;
  const T tol = static_cast<T>(abs_tol);
  T lanes[kLanes], lows[kLanes];
  for (size_t j = 0; j < kLanes; ++j) lanes[j] = 1, lows[j] = 0;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      T r, prod;
      pair_terms(original[i + j], perturbed[i + j], tol, r, prod);
      lanes[j] = r > lanes[j] ? r : lanes[j];
      lows[j] = prod < lows[j] ? prod : lows[j];
    }
  }
  T ratio = 1, low = 0;
  for (size_t j = 0; j < kLanes; ++j) {
    ratio = lanes[j] > ratio ? lanes[j] : ratio;
    low = lows[j] < low ? lows[j] : low;
  }
  for (; i < n; ++i) {
    T r, prod;
    pair_terms(original[i], perturbed[i], tol, r, prod);
    ratio = r > ratio ? r : ratio;
    low = prod < low ? prod : low;
  }
  // the product's bound in double: tol^2 may be below float's smallest normal
  return {static_cast<double>(ratio), static_cast<double>(low) < -(abs_tol * abs_tol)};
}

}  // namespace

PerturbationRatio perturbation_ratio(const double* original, const double* perturbed, size_t n,
                                     double abs_tol) {
  return ratio_of(original, perturbed, n, abs_tol);
}

PerturbationRatio perturbation_ratio(const float* original, const float* perturbed, size_t n,
                                     double abs_tol) {
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
