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

// The element type the kernel reads for a dtype: fn(T()) for it, and false for dtypes it does not
// read (float8, unknown: the ATen reductions take them). The one dtype table of the kernels and
// of their launches. (Instantiated with a host lambda in enqueue_stats and a device one in the
// kernel: the pragma lets each instantiation call into its own side only.)
#pragma nv_exec_check_disable
template <typename Fn>
__host__ __device__ __forceinline__ bool with_element_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF64:
      fn(double());
      return true;
    case DType::kF32:
      fn(float());
      return true;
    case DType::kF16:
      fn(__half());
      return true;
    case DType::kBF16:
      fn(__nv_bfloat16());
      return true;
    case DType::kI8:
      fn(int8_t());
      return true;
    case DType::kI16:
      fn(int16_t());
      return true;
    case DType::kI32:
      fn(int32_t());
      return true;
    case DType::kI64:
      fn(int64_t());
      return true;
    case DType::kU8:
      fn(uint8_t());
      return true;
    case DType::kBool:
      fn(BoolByte());
      return true;
    default:
      return false;
  }
}

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
  // One dtype per block: no divergence. Items are batchable() dtypes only.
  with_element_type(static_cast<DType>(it.dtype), [&](auto element) {
    accumulate_share<decltype(element)>(it.data, it.n, i, stride, acc);
  });
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
  int err = kNotLaunched;
  with_element_type(dtype,
                    [&](auto element) { err = launch<decltype(element)>(data, n, work, s); });
  return err;
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
