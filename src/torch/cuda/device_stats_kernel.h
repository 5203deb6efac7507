// The fused CUDA statistics kernel's host entry point. No CUDA or torch types: tensor_leaf.cc
// (compiled by the host compiler) passes the raw pointer, the dtype and the stream.
#pragma once

#include <cstdint>

#include "numprobe/dtype.h"

namespace numprobe::capture::cuda_stats {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

// Blocks of the first pass for n elements: at least 8 elements per thread, at most kMaxBlocks.
constexpr int blocks_for(int64_t n) {
  const int64_t per_block = int64_t{kThreads} * 8;
  const int64_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : static_cast<int>(b));
}

// Enqueues on `stream` the statistics of the n elements from `data` (device memory, any order):
// `work` holds (blocks_for(n) + 1) * 8 doubles of device memory; the last eight receive max and
// min ignoring NaN (-inf/+inf when every element is NaN), sum, sum of squares, and the counts of
// NaN, +Inf, -Inf and zeros, all accumulated in float64. Returns 0 (enqueued), kNotLaunched (an
// earlier CUDA error is pending: nothing was launched, and the error was left for torch), or the
// CUDA error code of the launches (cleared). kNotLaunched too for dtypes it does not read
// (float8, unknown).
constexpr int kNotLaunched = -1;
int enqueue_stats(const void* data, DType dtype, int64_t n, double* work, void* stream);

}  // namespace numprobe::capture::cuda_stats
