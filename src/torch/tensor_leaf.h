// at::Tensor -> msprobe tensor leaf: statistics (Highway kernel on CPU memory, device_stats.h
// elsewhere, once per version of the memory: stats_cache.h), CRC-32 for md5 mode, and a private
// copy of the bytes for tensor mode.
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
  // Device statistics may join the thread's open batch (stats_batch.h): the caller is inside a
  // section that seal_stats_batches() ends before the step goes on.
  bool batch = false;
};

// Fills leaf from t (t defined). Runs with record-function and autograd disabled by the caller.
void fill_tensor_leaf(const at::Tensor& t, const LeafRequest& req, TensorLeaf& leaf);

}  // namespace numprobe::capture
