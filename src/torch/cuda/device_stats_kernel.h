// The fused CUDA statistics kernel's host entry point. No CUDA or torch types: tensor_leaf.cc
// (compiled by the host compiler) passes the raw pointer, the dtype and the stream.
#pragma once

#include <cstdint>

#include "capture/stats_batch_plan.h"
#include "numprobe/dtype.h"

namespace numprobe::capture::cuda_stats {

// One tensor's launch uses the batch plan's block shape and block count (stats_batch_plan.h).
using stats_batch::blocks_for;
using stats_batch::kThreads;

// Enqueues on `stream` the statistics of the n elements from `data` (device memory, any order):
// `work` holds (blocks_for(n) + 1) * 8 doubles of device memory; the last eight receive max and
// min ignoring NaN (-inf/+inf when every element is NaN), sum, sum of squares, and the counts of
// NaN, +Inf, -Inf and zeros, all accumulated in float64. Returns 0 (enqueued), kNotLaunched (an
// earlier CUDA error is pending: nothing was launched, and the error was left for torch), or the
// CUDA error code of the launches (cleared). kNotLaunched too for dtypes it does not read
// (float8, unknown).
constexpr int kNotLaunched = -1;
int enqueue_stats(const void* data, DType dtype, int64_t n, double* work, void* stream);

// Enqueues on `stream` the statistics of every item of `table` (device memory, dense) in two
// launches, one where every item fits one block (stats_batch_plan.h): `work` holds (table.blocks +
// table.count) * 8 doubles of device memory; item k's eight reductions land at work + (table.blocks
// + k) * 8, the same fields as enqueue_stats. Returns 0, kNotLaunched (an earlier CUDA error is
// pending) or the CUDA error of the launches (cleared).
int enqueue_batch_stats(const stats_batch::Table& table, double* work, void* stream);

}  // namespace numprobe::capture::cuda_stats
