// The per-thread statistics cache (large tensors are summarised once per version of their memory)
// and the process-wide leaf counters.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "capture/capture_record.h"

namespace numprobe::capture {

// Identifies a tensor's memory and its version (stats_cache.cc says why this is enough).
struct CacheKey {
  const void* counter;
  const c10::TensorImpl* impl;
  uint32_t version;
  const void* data;
  int64_t numel;
  c10::ScalarType dtype;
};

// False for tensors the cache cannot key safely (small ones, inference tensors: no version
// counter). dense: t covers exactly its numel elements from its data pointer (keyed without its
// TensorImpl).
bool cache_key(const at::Tensor& t, bool dense, CacheKey& k);
// The statistics this thread last computed for k in this step (deferred: still on their way).
bool cache_find(const CacheKey& k, TensorStats& stats, std::shared_ptr<DeferredStats>& deferred);
void cache_put(const at::Tensor& t, const CacheKey& k, const TensorStats& stats,
               std::shared_ptr<DeferredStats> deferred = nullptr);

// Statistics computed before this call are not reused for tensors seen after it (a new step).
void next_stats_generation();

// Process-wide counters of statistics leaves: computed by a pass over memory, taken from the
// per-version cache, the bytes the passes read, and the multi-tensor launches of device
// statistics (stats_batch.h) with the leaves they summarised.
struct LeafCounters {
  uint64_t computed = 0;
  uint64_t cached = 0;
  uint64_t bytes = 0;
  uint64_t batches = 0;
  uint64_t batched = 0;
};
LeafCounters leaf_counters();
void count_cached();
void count_computed();
void count_bytes(uint64_t n);
void count_batch(uint64_t items);

}  // namespace numprobe::capture
