// Fused one-pass tensor statistics: the numbers msprobe writes as Max/Min/Mean/Norm, plus counts
// msprobe loses (NaN, +Inf, -Inf, zeros).
//
// Invariants:
//  - min/max ignore NaN; they include +-Inf. All-NaN or empty input gives NaN min/max.
//  - sum and sum of squares accumulate in float64 for every input type, so bf16/fp16/fp32 inputs
//    get better-than-fp32 accuracy; they follow IEEE rules (any NaN makes them NaN, Inf makes them
//    Inf) as if the non-finite elements were added last, whatever their position.
//  - mean = sum / count, norm = sqrt(sumsq). Integer and bool inputs are converted exactly to
//    double (int64 beyond 2^53 rounds to nearest).
//  - Results do not depend on the thread count beyond float64 summation reordering.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numprobe/dtype.h"

namespace numprobe {

class WorkerPool;

struct TensorStats {
  uint64_t count = 0;
  double min = 0;
  double max = 0;
  double sum = 0;
  double sumsq = 0;
  uint64_t nan_count = 0;
  uint64_t pos_inf_count = 0;
  uint64_t neg_inf_count = 0;
  uint64_t zero_count = 0;

  double mean() const;
  double norm() const;
};

struct StatsOptions {
  // 0 = use hardware concurrency; 1 (or negative) = never spawn threads. Threads get contiguous
  // chunks of whole 16384-element granules and at least max(16384, parallel_threshold / 4)
  // elements each, which caps the thread count for smaller inputs. If a thread cannot be started
  // its chunk runs on the calling thread.
  int threads = 0;
  // Inputs with fewer elements than this run single-threaded.
  size_t parallel_threshold = size_t{1} << 22;
  // Run the chunks on these persistent workers (plus the caller) instead of starting threads;
  // `threads` is then capped at workers + 1.
  WorkerPool* pool = nullptr;
  // When set, also the CRC-32 of the data's bytes (numprobe::crc32's value), computed in the same
  // pass: each thread takes the CRC of a block right after its statistics, while it is in cache,
  // and the per-thread CRCs are combined. One read of memory instead of two (numprobe stats).
  uint32_t* crc32 = nullptr;
};

// data points at count contiguous elements of dtype (native little-endian, any alignment). Throws
// numprobe::Error for kUnknown (even when count is 0) and for a null data with count > 0.
// Bool elements are 0 for a zero byte and 1 for any other byte. Float work is SIMD, dispatched at
// run time to the best instruction set the CPU has (Highway).
TensorStats compute_stats(const void* data, size_t count, DType dtype,
                          const StatsOptions& opt = {});

}  // namespace numprobe
