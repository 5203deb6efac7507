// Statistics of device tensors gathered per section of the training thread and enqueued together:
// the tensors a capture records inside one InternalGuard section (a call's inputs before the call
// runs; its outputs, or a backward entry's gradients, after) become one multi-tensor launch of the
// fused kernel (stats_batch_plan.h) and one copy of its results into the pinned staging ring; a
// section of one or two small tensors becomes one copy of each tensor's elements. The training
// thread records no event: the thread that resolves a leaf (the writer) records one on the
// stream, which covers every batch launched there before it (stream order), and reuses it for
// every later batch it covers. So the training thread pays a table row per tensor and a launch
// and a copy per section; the writer waits for an event per stretch of entries.
//
// A section is launched when it closes (the outermost InternalGuard seals it), so every tensor is
// read in stream order before anything the training step enqueues after the section: an in-place op
// after a call's inputs were recorded cannot change them. Also launched: when the table is full,
// when a tensor of another device or stream arrives, when the thread submits an entry (so the
// writer never waits for a batch that is not launched) and when it resolves one of its own leaves
// (overflow_check).
//
// CPU tensors under NUMPROBE_DEFER_CPU_STATS=1 are batched and numbered the same way, and the plan
// runs on the host at launch (stats_batch_host.h): the test route for machines without a GPU.
// NUMPROBE_BATCH_DEVICE_STATS=0 turns batching off (a copy or reduction and an event per tensor).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

#include "capture/capture_record.h"

namespace numprobe::capture {

// t's statistics as an item of this thread's open section: the values arrive with the batch. The
// caller is inside a section that ends with seal_stats_batches() (InternalGuard's outermost exit),
// before the step can write t again. nullptr where t is not batched (batching off, a dtype or
// memory the kernel does not read, no kernel built): the caller takes the per-tensor route.
std::shared_ptr<DeferredStats> batch_stats(const at::Tensor& t, DType dt);

// Launches this thread's gathered tensors now (nothing when none are waiting): when a section
// closes, and before an entry reaches the writer.
void seal_stats_batches();

}  // namespace numprobe::capture
