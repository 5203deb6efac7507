// The plan of a multi-tensor statistics launch: the tensors a capture records between two points
// of the training thread (one call's inputs, or its outputs) reduced by one launch instead of one
// (or two) per tensor. One table of items (data pointer, element count, dtype) is passed by value;
// every item gets a run of consecutive blocks, each block reads a strided share of its item's
// elements, and a second pass combines each item's block partials into the eight reductions of
// compute_stats (max and min ignoring NaN, sum, sum of squares, counts of NaN, +Inf, -Inf, zeros;
// all float64).
//
// Compiled by nvcc (the kernel, device_stats_kernel.cu) and by the host compiler (the host run of
// the same plan, stats_batch_host.cc, which the unit tests compare with compute_stats and which
// the capture uses for CPU tensors under NUMPROBE_DEFER_CPU_STATS=1): so the block partition,
// the element rule and the combination are tested on machines without a GPU.
//
// Invariants: blocks of item k are [first_block(k), first_block(k+1)); within them, element i of
// the item is read by exactly one (block, lane): block first_block + (i / kThreads) % blocks,
// lane i % kThreads. Results do not depend on scheduling (no atomics).
#pragma once

#include <cmath>
#include <cstdint>

#include "numprobe/dtype.h"

#if defined(__CUDACC__)
#define NUMPROBE_HD __host__ __device__ __forceinline__
#else
#define NUMPROBE_HD inline
#endif

namespace numprobe::capture::stats_batch {

constexpr int kThreads = 256;  // threads per block (lanes of the host run)
constexpr int kPerThread = 8;  // elements a thread reads before an item takes a second block
constexpr int kMaxItemBlocks = 1024;
constexpr int kMaxItems = 96;  // a table stays under the 4 KiB of kernel parameters
constexpr int kFields = 8;     // max, min, sum, sumsq, nan, +inf, -inf, zero

struct Item {
  const void* data;     // dense elements (any order: statistics do not depend on it)
  int64_t n;            // > 0
  int32_t dtype;        // a DType that batchable() accepts
  int32_t first_block;  // the item's first block in the launch
};

struct Table {
  int32_t count = 0;   // items
  int32_t blocks = 0;  // blocks of the first pass: the items' blocks, end to end
  Item items[kMaxItems];
};

// The dtypes the kernel reads (float8 and unknown ones take the per-tensor routes).
constexpr bool batchable(DType d) {
  return d == DType::kF64 || d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 ||
         d == DType::kI8 || d == DType::kI16 || d == DType::kI32 || d == DType::kI64 ||
         d == DType::kU8 || d == DType::kBool;
}

// Blocks of an item of n elements: at least kPerThread elements per thread, at most
// kMaxItemBlocks.
NUMPROBE_HD int blocks_for(int64_t n) {
  const int64_t per_block = int64_t{kThreads} * kPerThread;
  const int64_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > kMaxItemBlocks ? kMaxItemBlocks : static_cast<int>(b));
}

// Appends an item; false (table unchanged) when the table is full. n > 0, batchable(dtype).
inline bool add_item(Table& t, const void* data, int64_t n, DType dtype) {
  if (t.count == kMaxItems) return false;
  Item& it = t.items[t.count++];
  it.data = data;
  it.n = n;
  it.dtype = static_cast<int32_t>(dtype);
  it.first_block = t.blocks;
  t.blocks += blocks_for(n);
  return true;
}

NUMPROBE_HD int item_blocks(const Table& t, int k) {
  const int end = k + 1 < t.count ? t.items[k + 1].first_block : t.blocks;
  return end - t.items[k].first_block;
}

// The item that block b belongs to (binary search: the last item whose first block is <= b).
NUMPROBE_HD int item_of_block(const Table& t, int b) {
  int lo = 0, hi = t.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (t.items[mid].first_block <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Lane `lane` of block b (of item k) reads elements start, start + stride, ... below n.
NUMPROBE_HD int64_t first_element(const Table& t, int k, int b, int lane) {
  return static_cast<int64_t>(b - t.items[k].first_block) * kThreads + lane;
}
NUMPROBE_HD int64_t element_stride(const Table& t, int k) {
  return static_cast<int64_t>(item_blocks(t, k)) * kThreads;
}

NUMPROBE_HD void identity(double (&a)[kFields]) {
  a[0] = -INFINITY;
  a[1] = INFINITY;
  for (int f = 2; f < kFields; ++f) a[f] = 0.0;
}

NUMPROBE_HD void combine(double (&a)[kFields], const double (&b)[kFields]) {
  a[0] = fmax(a[0], b[0]);
  a[1] = fmin(a[1], b[1]);
  for (int f = 2; f < kFields; ++f) a[f] += b[f];
}

// One element, as compute_stats counts it: NaN counted and left out of the extrema, but kept in
// the sums (any NaN makes them NaN, as on the host).
NUMPROBE_HD void accumulate(double (&a)[kFields], double v) {
  if (v != v) {
    a[4] += 1.0;
  } else {
    a[0] = fmax(a[0], v);
    a[1] = fmin(a[1], v);
    a[5] += v == INFINITY ? 1.0 : 0.0;
    a[6] += v == -INFINITY ? 1.0 : 0.0;
    a[7] += v == 0.0 ? 1.0 : 0.0;
  }
  a[2] += v;
  a[3] += v * v;
}

}  // namespace numprobe::capture::stats_batch
