// free_benchmark's comparison of an API's output with the output of its perturbed re-run
// (docs/capture.md, "free_benchmark"). Torch-free: the front hands both outputs as float64
// arrays of equal length, element i of one against element i of the other.
#pragma once

#include <cstddef>

namespace numprobe::capture {

// msprobe's "endless norm" for the on-device perturbations (msprobe 8.3.3's calculate_max_ratio):
// with a = max(|o|, abs_tol) and b = max(|p|, abs_tol) per element, the ratio is the largest
// max(a / b, b / a); 1 means unchanged. The output is consistent while 1/threshold <= ratio <=
// threshold and its sign did not flip: sign_flipped is o * p < -abs_tol^2 for some element (a
// sign change of a value larger than abs_tol; msprobe reports it as "symbol_flipping"). Pairs
// where either value is NaN or infinite are skipped (msprobe lets one NaN turn the whole ratio
// into "consistent"), and so is, for the sign test only, a product beyond T's range; n == 0
// gives ratio 1, not flipped.
struct PerturbationRatio {
  double ratio = 1;
  bool sign_flipped = false;
};
PerturbationRatio perturbation_ratio(const double* original, const double* perturbed, size_t n,
                                     double abs_tol);
// The same over float32 outputs (fp16/bf16 widen to float32 exactly), in float32 arithmetic
// (its 2^-24 relative rounding is far below the tightest threshold, 1.0002; msprobe divides in
// the output's own dtype instead, see docs/capture.md).
PerturbationRatio perturbation_ratio(const float* original, const float* perturbed, size_t n,
                                     double abs_tol);

// msprobe's single benchmark for to_cpu (the device output `actual` against the CPU `golden`):
// the largest absolute error over elements with |actual| < small_value, the largest relative
// error |a - g| / |g| over the others, and the error balance mean((a - g) / max(|g|, small_value
// where |g| >= small_value, else 1)). A non-finite golden value makes the pair not comparable
// (golden_finite false, msprobe's "not supported"); a non-finite actual value counts as 1, as
// msprobe replaces it.
struct BenchmarkErrors {
  double max_abs_small = 0;
  double max_rel = 0;
  double err_balance = 0;
  bool golden_finite = true;
};
BenchmarkErrors benchmark_errors(const double* actual, const double* golden, size_t n,
                                 double small_value);

}  // namespace numprobe::capture
