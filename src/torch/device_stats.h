// Statistics of tensors that are not plain CPU memory (CUDA and other devices): reduced where they
// live (the fused CUDA kernel where built, else ATen ops), or enqueued to the host without waiting
// (a DeferredStats the writer thread resolves), and the asynchronous host copies of tensor-mode
// bytes.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

#include "capture/capture_record.h"

namespace numprobe::capture {

// True when the environment variable is "1..." (the NUMPROBE_* debugging switches).
bool env_flag(const char* name);

// The reductions of compute_stats computed where t lives, packed as eight doubles on t's device
// (max and min ignoring NaN, sum, sum of squares, counts of NaN, +Inf, -Inf, zeros): the fused
// CUDA kernel where built, else ATen ops. Nothing waits for the device.
at::Tensor device_reductions(const at::Tensor& t);
// The statistics of t computed on its device, waited for (t not on the CPU, or not strided).
void device_stats(const at::Tensor& t, TensorLeaf& leaf);

// CUDA tensors of up to this many elements are copied to pinned host memory and summarised there
// by compute_stats (one transfer enqueued per tensor, the host's exact definitions); larger ones
// are reduced on the device and only the eight results come back.
constexpr int64_t kHostCopyMaxElements = int64_t{1} << 16;

// Enqueues the copy of t's elements (small tensors) or of its eight reductions (large ones) to
// the host; resolve() on the writer thread waits for it.
std::shared_ptr<DeferredStats> enqueue_stats(const at::Tensor& t, DType dt);

// t's bytes (contiguous, its dtype) on their way to the host (tensor mode with async_dump).
PendingTensorData copy_to_host_async(const at::Tensor& t);

// Whether t's elements are real memory at its data pointer that raw reads (CUDA calls, the host
// run of a batch) may read: not an efficient zero tensor (no memory), not a Python tensor
// subclass (DTensor, FakeTensor).
bool has_own_memory(const at::Tensor& t);

// t itself where its elements are exactly the numel ones from its data pointer (any dense order:
// statistics do not depend on it; see CachedStats), else a contiguous copy. A lazily negated view
// (_neg_view) is not its memory.
at::Tensor dense_elements(const at::Tensor& t);

// Whether the fused CUDA kernel may read t's memory as dtype dt (built, not switched off or
// failed, t a CUDA tensor with memory of its own, a dtype the kernel reads).
bool fused_kernel_reads(const at::Tensor& t, DType dt);
// A launch of the kernel failed: reported once on stderr; the ATen reductions take over.
void note_kernel_failure(int cuda_error);

// Whether CUDA tensors are summarised by the fused kernel (built with nvcc) or by ATen ops.
bool cuda_stats_kernel_built();

}  // namespace numprobe::capture
