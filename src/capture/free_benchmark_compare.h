// free_benchmark's comparison of an API's output with the output of its perturbed re-run
// (docs/capture.md, "free_benchmark"). Torch-free: the front hands both outputs as float64
// arrays of equal length, element i of one against element i of the other.
#pragma once

#include <cstddef>

namespace numprobe::capture {

// msprobe's "endless norm" for the on-device perturbations: over the elements,
//   r1 = |o| / (|p| + abs_tol) where |p| > abs_tol, else 1
//   r2 = |p| / (|o| + abs_tol) where |o| > abs_tol, else 1
// and the ratio is max(max r1, max r2); 1 means unchanged. The output is consistent while
// 1/threshold <= ratio <= threshold. Pairs where either value is NaN or infinite are skipped
// (msprobe lets one NaN turn the whole ratio into "consistent"); n == 0 gives 1.
double perturbation_ratio(const double* original, const double* perturbed, size_t n,
                          double abs_tol);
// The same over float32 outputs (fp16/bf16 widen to float32 exactly), in float32 arithmetic
// (its 2^-24 relative rounding is far below the tightest threshold, 1.0002).
double perturbation_ratio(const float* original, const float* perturbed, size_t n, double abs_tol);

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
