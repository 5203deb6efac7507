#include "torch/tensor_leaf.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <thread>

#include "base/worker_pool.h"
#include "core/hash.h"
#include "core/stats.h"
#include "torch/device_stats.h"
#include "torch/dtype_names.h"
#include "torch/stats_batch.h"
#include "torch/stats_cache.h"

namespace numprobe::capture {

void fill_tensor_leaf(const at::Tensor& t, const LeafRequest& req, TensorLeaf& leaf) {
  leaf.dtype = torch_dtype_name(t.scalar_type());
  auto sizes = t.sizes();
  leaf.shape.assign(sizes.begin(), sizes.end());
  leaf.requires_grad = t.requires_grad();
  const int64_t n = t.numel();
  if (n == 0 || req.data == LeafData::kNone) return;
  const DType dt = to_dtype(t.scalar_type());
  const bool on_cpu = t.device().is_cpu() && t.layout() == c10::kStrided;

  static const bool defer_cpu = env_flag("NUMPROBE_DEFER_CPU_STATS");
  if (req.async && req.data != LeafData::kMd5 && !req.save_as.empty() && dt != DType::kUnknown &&
      (t.is_cuda() || (on_cpu && defer_cpu))) {
    leaf.pending = copy_to_host_async(t.detach());
    leaf.pending.dtype = dt;
    leaf.data_name = req.save_as;
  } else if (req.data == LeafData::kMd5 || !req.save_as.empty()) {
    // Bytes in the tensor's own dtype, contiguous, on the host (msprobe: CRC-32 of exactly that).
    at::Tensor host = t.detach().to(at::kCPU).contiguous();
    if (req.data == LeafData::kMd5)
      leaf.crc32 = crc32(host.data_ptr(), static_cast<size_t>(n) * host.element_size());
    if (!req.save_as.empty() && dt != DType::kUnknown) {
      // The training step may modify t in place later: the writer gets its own copy.
      if (host.data_ptr() == t.data_ptr()) host = host.clone();
      auto* keep = new at::Tensor(host);
      leaf.pending.owner = std::shared_ptr<const void>(
          keep, [](const void* p) { delete static_cast<const at::Tensor*>(p); });
      leaf.pending.data = keep->data_ptr();
      leaf.pending.dtype = dt;
      leaf.data_name = req.save_as;
    }
    if (req.data == LeafData::kMd5) return;
  }

  if (t.is_complex()) {
    // Summarised by their magnitudes, as msprobe does (numpy's abs), Norm included.
    at::Tensor magnitudes;
    try {
      magnitudes = t.detach().resolve_conj().resolve_neg().abs();
    } catch (const c10::Error&) {
      return;  // complex32 on some devices: no abs kernel, no statistics
    }
    TensorLeaf of_magnitudes;
    fill_tensor_leaf(magnitudes, LeafRequest(), of_magnitudes);
    leaf.has_stats = of_magnitudes.has_stats;
    leaf.stats = of_magnitudes.stats;
    leaf.deferred = std::move(of_magnitudes.deferred);
    return;
  }
  leaf.has_stats = true;
  leaf.bool_stats = t.scalar_type() == c10::ScalarType::Bool;
  // Dense tensors (contiguous, or a permutation of that: transposes) are read in place on the
  // CPU. A lazily negated view (_neg_view) is not its memory: keyed as itself, resolved first.
  const bool dense = t.layout() == c10::kStrided && !t.is_neg() && t.is_non_overlapping_and_dense();
  CacheKey key;
  const bool use_cache = cache_key(t, dense, key);
  if (use_cache && cache_find(key, leaf.stats, leaf.deferred)) {
    count_cached();
    return;
  }
  count_computed();
  if (on_cpu && dt != DType::kUnknown && !defer_cpu) {
    at::Tensor copy;
    if (!dense) copy = t.resolve_neg().contiguous();
    const void* data = dense ? t.data_ptr() : copy.data_ptr();
    StatsOptions opt;
    // Large tensors are split over every core: statistics are memory-bound and a training
    // process rarely keeps all cores' memory bandwidth busy. The workers persist (a thread start
    // per tensor cost ~2 % of a transformer step); below 1M elements one thread is faster.
    static WorkerPool* pool =
        new WorkerPool(std::max(1u, std::thread::hardware_concurrency()) - 1);  // never freed
    opt.threads = 0;
    opt.pool = pool;
    opt.parallel_threshold = size_t{1} << 20;
    leaf.stats = compute_stats(data, static_cast<size_t>(n), dt, opt);
    count_bytes(static_cast<uint64_t>(n) * t.element_size());
    if (use_cache) cache_put(t, key, leaf.stats);
    return;
  }
  if (dt == DType::kUnknown && !t.is_floating_point()) {
    leaf.has_stats = false;  // quantized and other exotic dtypes
    return;
  }
  static const bool sync = env_flag("NUMPROBE_SYNC_DEVICE_STATS");
  if (t.is_cuda() || (on_cpu && defer_cpu)) {
    const at::Tensor d = t.detach();
    if (req.batch) leaf.deferred = batch_stats(d, dt);  // with the other tensors of this section
    if (!leaf.deferred) leaf.deferred = enqueue_stats(d, dt);
    if (!sync) {  // the values arrive on the writer thread
      if (use_cache) cache_put(t, key, leaf.stats, leaf.deferred);
      return;
    }
    leaf.resolve_stats();
  } else {
    device_stats(t.detach(), leaf);
  }
  if (use_cache) cache_put(t, key, leaf.stats);
}

}  // namespace numprobe::capture
