// Internal: the SIMD block kernel behind tensor_metrics (tensor_metrics_kernel.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace numprobe::internal {

// Partial sums of a tensor-mode comparison, one slot per SIMD lane (kMetricLanes covers the widest
// Highway target). Unused lanes stay zero, which is neutral for every sum, maximum and count.
constexpr size_t kMetricLanes = 16;
struct TensorMetricAccum {
  double dot[kMetricLanes] = {}, tt[kMetricLanes] = {}, gg[kMetricLanes] = {};
  double sq[kMetricLanes] = {}, max_abs[kMetricLanes] = {}, max_rel[kMetricLanes] = {};
  double within1[kMetricLanes] = {}, within5[kMetricLanes] = {};  // exact counts below 2^53
};

// Folds n elements of t and g (already decoded) into acc; NaN/Inf count as 0 vs 0. Returns false
// when NaN/Inf positions or values differ (acc is then meaningless). n must be a multiple of 8.
// rel = |t-g| / (|g|, or zero_floor where g == 0).
bool tensor_metric_block(const double* t, const double* g, size_t n, double zero_floor, double thr1,
                         double thr5, TensorMetricAccum* acc);

// IEEE half bits to double (hardware conversion where the target has it).
void decode_f16(const uint16_t* bits, size_t n, double* out);

}  // namespace numprobe::internal
