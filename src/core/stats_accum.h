// Internal: the mergeable partial result of a statistics pass, shared by the SIMD kernels
// (stats_kernels.cc), the scalar paths and the threading driver (stats.cc).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/stats.h"

namespace numprobe::internal {

// Elements per unit of work split between threads. Every kernel's block size divides it, so a
// multi-threaded pass sums the same blocks as a single-threaded one and only merges differ.
constexpr size_t kStatsGranule = 16384;

// Sums cover finite elements only; NaN/Inf enter through their counts in finish(), so the result
// does not depend on where in the data the non-finite values are or how the data was split.
struct StatsAccum {
  uint64_t count = 0;
  uint64_t nan = 0;
  uint64_t pos_inf = 0;
  uint64_t neg_inf = 0;
  uint64_t zero = 0;
  double min = std::numeric_limits<double>::infinity();  // over non-NaN elements
  double max = -std::numeric_limits<double>::infinity();
  // Neumaier-compensated sums of per-block partial sums.
  double sum = 0;
  double sum_c = 0;
  double sumsq = 0;
  double sumsq_c = 0;

  static void compensated_add(double& s, double& c, double x) {
    const double t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  void add_sum(double x) { compensated_add(sum, sum_c, x); }
  void add_sumsq(double x) { compensated_add(sumsq, sumsq_c, x); }
  void add_min_max(double lo, double hi) {
    if (lo < min) min = lo;
    if (hi > max) max = hi;
  }

  void merge(const StatsAccum& o) {
    count += o.count;
    nan += o.nan;
    pos_inf += o.pos_inf;
    neg_inf += o.neg_inf;
    zero += o.zero;
    add_min_max(o.min, o.max);
    add_sum(o.sum);
    sum_c += o.sum_c;
    add_sumsq(o.sumsq);
    sumsq_c += o.sumsq_c;
  }

  // One element, any value. Used for tails and by the scalar paths.
  void add_value(double v) {
    if (std::isnan(v)) {
      ++nan;
      return;
    }
    add_min_max(v, v);
    if (std::isinf(v)) {
      ++(v > 0 ? pos_inf : neg_inf);
      return;
    }
    if (v == 0) ++zero;
    add_sum(v);
    add_sumsq(v * v);
  }

  TensorStats finish() const {
    TensorStats s;
    s.count = count;
    s.nan_count = nan;
    s.pos_inf_count = pos_inf;
    s.neg_inf_count = neg_inf;
    s.zero_count = zero;
    const bool any_number = count > nan;
    s.min = any_number ? min : std::numeric_limits<double>::quiet_NaN();
    s.max = any_number ? max : std::numeric_limits<double>::quiet_NaN();
    // The compensation is meaningless once a (float64-input) sum overflowed.
    s.sum = std::isfinite(sum) ? sum + sum_c : sum;
    s.sumsq = std::isfinite(sumsq) ? sumsq + sumsq_c : sumsq;
    // Apply IEEE rules as if the non-finite elements had been added last.
    const double inf = std::numeric_limits<double>::infinity();
    if (pos_inf) s.sum += inf;
    if (neg_inf) s.sum -= inf;
    if (pos_inf || neg_inf) s.sumsq += inf;
    if (nan) {
      s.sum = std::numeric_limits<double>::quiet_NaN();
      s.sumsq = std::numeric_limits<double>::quiet_NaN();
    }
    return s;
  }
};

// Kernel entry points (stats_kernels.cc), dispatched to the best SIMD target at run time. Each adds
// the n elements at p (any alignment, native little-endian) to acc, including acc->count.
void stats_f64(const void* p, size_t n, StatsAccum* acc);
void stats_f32(const void* p, size_t n, StatsAccum* acc);
void stats_f16(const void* p, size_t n, StatsAccum* acc);
void stats_bf16(const void* p, size_t n, StatsAccum* acc);
// table maps each of the 256 fp8 codes to its float value.
void stats_fp8(const void* p, size_t n, const float* table, StatsAccum* acc);

}  // namespace numprobe::internal
