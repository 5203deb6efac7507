// at::Tensor -> msprobe tensor leaf: statistics (Highway kernel on CPU memory, ATen reductions in
// fp32-or-better elsewhere), CRC-32 for md5 mode, and a private copy of the bytes for tensor mode.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "capture/capture_record.h"

namespace numprobe::capture {

enum class LeafData { kStatistics, kMd5, kNone };

struct LeafRequest {
  LeafData data = LeafData::kStatistics;
  std::string save_as;  // non-empty: keep a copy of the bytes to write under this file name
  bool async = false;   // async_dump: device -> host copies of saved bytes are not waited for
};

// Fills leaf from t (t defined). Runs with record-function and autograd disabled by the caller.
void fill_tensor_leaf(const at::Tensor& t, const LeafRequest& req, TensorLeaf& leaf);

// Statistics computed before this call are not reused for tensors seen after it (a new step).
void next_stats_generation();

// Process-wide counters of statistics leaves: computed by a pass over memory, taken from the
// per-version cache, and the bytes the passes read.
struct LeafCounters {
  uint64_t computed = 0;
  uint64_t cached = 0;
  uint64_t bytes = 0;
};
LeafCounters leaf_counters();

// Whether CUDA tensors are summarised by the fused kernel (built with nvcc) or by ATen ops.
bool cuda_stats_kernel_built();

}  // namespace numprobe::capture
