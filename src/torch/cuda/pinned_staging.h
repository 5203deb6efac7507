// Pinned host memory and CUDA events for device -> host copies of statistics inputs, reused across
// tensors. Per tensor the training thread then pays one cudaMemcpyAsync and one cudaEventRecord
// (the ATen route, a pinned at::empty + copy_ + c10::Event, cost several times that: the caching
// host allocator records an event of its own, and an event is created and destroyed per tensor).
// No torch or CUDA types here; thread-safe (training, autograd and writer threads).
#pragma once

#include <cstddef>
#include <cstdint>

namespace numprobe::capture::cuda_stats {

struct StagedCopy {
  void* host = nullptr;   // where the bytes arrive (valid once ready() is true)
  size_t offset = 0;      // in the ring
  size_t reserved = 0;    // bytes taken from the ring (0: not staged)
  void* event = nullptr;  // cudaEvent_t recorded after the copy
  int device = -1;
};

// Enqueues a copy of `bytes` from device memory `src` (on `device`) to pinned memory on `stream`,
// and records an event after it. The ring (NUMPROBE_CUDA_STAGING_MB, default 64 MiB) is allocated
// on the first call. False (nothing enqueued) when the ring has no room or a CUDA
// call fails; the caller then takes the ATen route.
bool stage_copy(const void* src, size_t bytes, int device, void* stream, StagedCopy& out);

// The same copy without an event of its own (out.event stays null): the caller records one
// covering event on the same stream after any number of such copies (record_pooled_event) and
// waits for that one instead. Never pass such a copy to staged_ready.
bool stage_copy_uncovered(const void* src, size_t bytes, int device, void* stream, StagedCopy& out);

// An event from the pool recorded on `stream` (the caller made `device` current): complete once
// everything enqueued on the stream before it is. nullptr when CUDA refuses (the caller then
// waits for the stream instead).
void* record_pooled_event(int device, void* stream);
// Waits until everything enqueued on `stream` has completed (when no event could be recorded).
void wait_for_stream(void* stream);
// Whether it has completed; never blocks. A failed device counts as complete.
bool pooled_event_ready(void* event);
// Back to the pool (complete, or never waited for and no longer needed).
void release_pooled_event(int device, void* event);

// Whether the copy has arrived (the event has completed). Never blocks.
bool staged_ready(const StagedCopy& c);

// Returns the ring space and the event; `c` must be ready (or never used).
void release_staged(StagedCopy& c);

}  // namespace numprobe::capture::cuda_stats
