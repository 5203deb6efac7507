// The multi-tensor statistics plan (stats_batch_plan.h) run on the host: the same blocks, lanes
// and combination as the CUDA kernel, one thread. Used for CPU tensors sent down the deferred
// route (NUMPROBE_DEFER_CPU_STATS=1, how the batching is tested without a GPU) and by the unit
// tests that hold the plan to compute_stats.
#pragma once

#include <cstdint>

#include "capture/stats_batch_plan.h"
#include "core/stats.h"

namespace numprobe::capture::stats_batch {

// out: table.count * kFields doubles, item k's eight reductions at out[k * kFields].
void run_on_host(const Table& table, double* out);

// Eight reductions (max, min, sum, sumsq, NaN, +Inf, -Inf, zero counts) of `count` elements as
// TensorStats: NaN extrema when every element is NaN, as compute_stats gives.
TensorStats stats_of_fields(const double* v, uint64_t count);

}  // namespace numprobe::capture::stats_batch
