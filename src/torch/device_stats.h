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
// Those eight values, arrived on the host, as TensorStats of count elements.
TensorStats unpack_reductions(const double* v, uint64_t count);

// The statistics of t computed on its device, waited for (t not on the CPU, or not strided).
void device_stats(const at::Tensor& t, TensorLeaf& leaf);

// Enqueues the copy of t's elements (small tensors) or of its eight reductions (large ones) to
// the host; resolve() on the writer thread waits for it.
std::shared_ptr<DeferredStats> enqueue_stats(const at::Tensor& t, DType dt);

// t's bytes (contiguous, its dtype) on their way to the host (tensor mode with async_dump).
PendingTensorData copy_to_host_async(const at::Tensor& t);

// Whether CUDA tensors are summarised by the fused kernel (built with nvcc) or by ATen ops.
bool cuda_stats_kernel_built();

}  // namespace numprobe::capture
