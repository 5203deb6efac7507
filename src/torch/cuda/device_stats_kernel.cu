// One read of a CUDA tensor gives all eight reductions of compute_stats (the ATen fallback in
// tensor_leaf.cc takes about twenty kernels and a float64 copy). Two launches: per-block partials,
// then one block combines them; no atomics, so the result does not depend on scheduling.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>

#include "capture/stats_batch_plan.h"
#include "torch/cuda/device_stats_kernel.h"

namespace numprobe::capture::cuda_stats {
namespace {

using stats_batch::kFields;
constexpr int kWarps = kThreads / 32;

// Integers and float/double convert as they are; the overloads below take the other types (a
// non-template overload wins over the template for its exact type).
template <typename T>
__device__ __forceinline__ double as_double(T v) {
  return static_cast<double>(v);
}
__device__ __forceinline__ double as_double(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ double as_double(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
// torch.bool bytes are read as bytes: any nonzero byte is true, as on the host (a bool holding 2,
// from a uint8 view, is undefined behaviour as a C++ bool).
struct BoolByte {
  uint8_t v;
};
__device__ __forceinline__ double as_double(BoolByte b) {
  return b.v != 0 ? 1.0 : 0.0;
}

using stats_batch::accumulate;
using stats_batch::combine;
using stats_batch::identity;

// Reduces every thread's accumulator; thread 0 writes the block's result to out[0..7].
__device__ void block_reduce(double (&acc)[kFields], double* out) {
  __shared__ double warp_acc[kWarps][kFields];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    double other[kFields];
#pragma unroll
    for (int k = 0; k < kFields; ++k) other[k] = __shfl_down_sync(0xffffffffu, acc[k], off);
    combine(acc, other);
  }
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kFields; ++k) warp_acc[warp][k] = acc[k];
  }
  __syncthreads();
  if (warp != 0) return;
  identity(acc);
  if (lane < kWarps) {
#pragma unroll
    for (int k = 0; k < kFields; ++k) acc[k] = warp_acc[lane][k];
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    double other[kFields];
#pragma unroll
    for (int k = 0; k < kFields; ++k) other[k] = __shfl_down_sync(0xffffffffu, acc[k], off);
    combine(acc, other);
  }
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kFields; ++k) out[k] = acc[k];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    partial_stats(const T* __restrict__ data, int64_t n, double* __restrict__ partial) {
  double acc[kFields];
  identity(acc);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    accumulate(acc, as_double(data[i]));
  }
  block_reduce(acc, partial + static_cast<int64_t>(blockIdx.x) * kFields);
}

__global__ void __launch_bounds__(kThreads)
    final_stats(const double* __restrict__ partial, int blocks, double* __restrict__ out) {
  double acc[kFields];
  identity(acc);
  for (int b = threadIdx.x; b < blocks; b += kThreads) {
    double p[kFields];
#pragma unroll
    for (int k = 0; k < kFields; ++k) p[k] = partial[b * kFields + k];
    combine(acc, p);
  }
  block_reduce(acc, out);
}

// ---- Many tensors in one launch (stats_batch_plan.h) --------------------------------------------

template <typename T>
__device__ __forceinline__ void accumulate_share(const void* data, int64_t n, int64_t i,
                                                 int64_t stride, double (&acc)[kFields]) {
  const T* __restrict__ p = static_cast<const T*>(data);
  for (; i < n; i += stride) accumulate(acc, as_double(p[i]));
}

// One block per (item, share): the table travels as a kernel parameter, so the launch needs no
// copy of its own.
__global__ void __launch_bounds__(kThreads)
    batch_partial_stats(const stats_batch::Table table, double* __restrict__ partial) {
  const int b = static_cast<int>(blockIdx.x);
  const int k = stats_batch::item_of_block(table, b);
  const stats_batch::Item& it = table.items[k];
  const int64_t i = stats_batch::first_element(table, k, b, static_cast<int>(threadIdx.x));
  const int64_t stride = stats_batch::element_stride(table, k);
  double acc[kFields];
  identity(acc);
  switch (static_cast<DType>(it.dtype)) {  // one dtype per block: no divergence
    case DType::kF64:
      accumulate_share<double>(it.data, it.n, i, stride, acc);
      break;
    case DType::kF32:
      accumulate_share<float>(it.data, it.n, i, stride, acc);
      break;
    case DType::kF16:
      accumulate_share<__half>(it.data, it.n, i, stride, acc);
      break;
    case DType::kBF16:
      accumulate_share<__nv_bfloat16>(it.data, it.n, i, stride, acc);
      break;
    case DType::kI8:
      accumulate_share<int8_t>(it.data, it.n, i, stride, acc);
      break;
    case DType::kI16:
      accumulate_share<int16_t>(it.data, it.n, i, stride, acc);
      break;
    case DType::kI32:
      accumulate_share<int32_t>(it.data, it.n, i, stride, acc);
      break;
    case DType::kI64:
      accumulate_share<int64_t>(it.data, it.n, i, stride, acc);
      break;
    case DType::kU8:
      accumulate_share<uint8_t>(it.data, it.n, i, stride, acc);
      break;
    case DType::kBool:
      accumulate_share<BoolByte>(it.data, it.n, i, stride, acc);
      break;
    default:  // never added (stats_batch::batchable)
      break;
  }
  block_reduce(acc, partial + static_cast<int64_t>(b) * kFields);
}

// One block per item: its blocks' partials, in block order.
__global__ void __launch_bounds__(kThreads)
    batch_final_stats(const stats_batch::Table table, const double* __restrict__ partial,
                      double* __restrict__ out) {
  const int k = static_cast<int>(blockIdx.x);
  const int first = table.items[k].first_block;
  const int blocks = stats_batch::item_blocks(table, k);
  double acc[kFields];
  identity(acc);
  for (int b = threadIdx.x; b < blocks; b += kThreads) {
    double p[kFields];
#pragma unroll
    for (int f = 0; f < kFields; ++f) p[f] = partial[static_cast<int64_t>(first + b) * kFields + f];
    combine(acc, p);
  }
  block_reduce(acc, out + static_cast<int64_t>(k) * kFields);
}

template <typename T>
int launch(const void* data, int64_t n, double* work, cudaStream_t stream) {
  // An error left by earlier work is torch's to report: launch nothing and leave it pending.
  if (cudaPeekAtLastError() != cudaSuccess) return kNotLaunched;
  const int blocks = blocks_for(n);
  partial_stats<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(data), n, work);
  final_stats<<<1, kThreads, 0, stream>>>(work, blocks, work + blocks * kFields);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int enqueue_stats(const void* data, DType dtype, int64_t n, double* work, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::kF64:
      return launch<double>(data, n, work, s);
    case DType::kF32:
      return launch<float>(data, n, work, s);
    case DType::kF16:
      return launch<__half>(data, n, work, s);
    case DType::kBF16:
      return launch<__nv_bfloat16>(data, n, work, s);
    case DType::kI8:
      return launch<int8_t>(data, n, work, s);
    case DType::kI16:
      return launch<int16_t>(data, n, work, s);
    case DType::kI32:
      return launch<int32_t>(data, n, work, s);
    case DType::kI64:
      return launch<int64_t>(data, n, work, s);
    case DType::kU8:
      return launch<uint8_t>(data, n, work, s);
    case DType::kBool:
      return launch<BoolByte>(data, n, work, s);
    default:  // float8 and unknown dtypes: the ATen reductions
      return kNotLaunched;
  }
}

int enqueue_batch_stats(const stats_batch::Table& table, double* work, void* stream) {
  if (table.count == 0) return 0;
  if (cudaPeekAtLastError() != cudaSuccess) return kNotLaunched;
  const auto s = static_cast<cudaStream_t>(stream);
  double* out = work + static_cast<int64_t>(table.blocks) * kFields;
  if (table.blocks == table.count) {
    // One block per item (every item <= kThreads * kPerThread elements): a block's partial is
    // its item's result, and one launch is enough.
    batch_partial_stats<<<table.blocks, kThreads, 0, s>>>(table, out);
  } else {
    batch_partial_stats<<<table.blocks, kThreads, 0, s>>>(table, work);
    batch_final_stats<<<table.count, kThreads, 0, s>>>(table, work, out);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace numprobe::capture::cuda_stats
