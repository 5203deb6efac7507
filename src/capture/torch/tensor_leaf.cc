#include "capture/torch/tensor_leaf.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/worker_pool.h"
#include "core/hash.h"
#include "core/stats.h"
#include "torch_common/dtype_names.h"

#ifdef NUMPROBE_CUDA_STATS_KERNEL
#include <c10/core/DeviceGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "capture/torch/cuda/device_stats_kernel.h"
#include "capture/torch/cuda/pinned_staging.h"
#endif

namespace numprobe::capture {
namespace {

// NUMPROBE_SYNC_DEVICE_STATS=1: wait for device statistics on the training thread (debugging).
// NUMPROBE_DEFER_CPU_STATS=1: route CPU tensors through the deferred path (tests of that path on
// machines without a GPU; there the copies complete at once and no event is needed).
// NUMPROBE_ATEN_DEVICE_STATS=1: reduce CUDA tensors with ATen ops and copy through ATen, not
// the fused kernel and the pinned staging ring (tests compare the two).
bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] == '1';
}

// t itself where its elements are exactly the numel ones from its data pointer (any dense order:
// statistics do not depend on it; see CachedStats), else a contiguous copy. A lazily negated view
// (_neg_view) is not its memory.
at::Tensor dense_elements(const at::Tensor& t) {
  return !t.is_neg() && t.is_non_overlapping_and_dense() ? t : t.resolve_neg().contiguous();
}

#ifdef NUMPROBE_CUDA_STATS_KERNEL
bool aten_route() {
  static const bool on = env_flag("NUMPROBE_ATEN_DEVICE_STATS");
  return on;
}

// Whether t's elements are real memory at its data pointer that raw CUDA calls may read: not an
// efficient zero tensor (no memory), not a Python tensor subclass (DTensor, FakeTensor).
bool has_own_memory(const at::Tensor& t) {
  return t.has_storage() && !t._is_zerotensor() && !t.key_set().has(c10::DispatchKey::Python) &&
         t.data_ptr() != nullptr;
}

// The eight reductions by the fused kernel on t's current stream; nullopt where it cannot run
// (dtype, or a launch error such as a GPU newer than the kernel's architectures: reported once,
// and the ATen reductions take over).
std::optional<at::Tensor> fused_reductions(const at::Tensor& t) {
  static std::atomic<bool> broken{false};
  const DType dt = to_dtype(t.scalar_type());
  if (aten_route() || dt == DType::kUnknown || broken.load(std::memory_order_relaxed) ||
      !has_own_memory(t))
    return std::nullopt;
  const at::Tensor c = dense_elements(t);
  const c10::DeviceGuard on_device(c.device());
  const int blocks = cuda_stats::blocks_for(c.numel());
  at::Tensor work = at::empty({(blocks + 1) * 8}, c.options().dtype(c10::ScalarType::Double));
  void* stream = c10::cuda::getCurrentCUDAStream(c.device().index()).stream();
  const int err =
      cuda_stats::enqueue_stats(c.data_ptr(), dt, c.numel(), work.data_ptr<double>(), stream);
  if (err == cuda_stats::kNotLaunched) return std::nullopt;
  if (err != 0) {
    if (!broken.exchange(true))
      std::fprintf(stderr,
                   "numprobe: the fused CUDA statistics kernel failed to launch (CUDA error %d); "
                   "using ATen reductions\n",
                   err);
    return std::nullopt;
  }
  return work.narrow(0, int64_t{blocks} * 8, 8);
}
#endif

// The reductions of compute_stats where the tensor lives (CUDA and other devices), packed as
// eight doubles: max and min ignoring NaN, sum, sum of squares (float64 accumulation), counts of
// NaN, +Inf, -Inf and zeros. CUDA: one fused kernel where built; otherwise ATen ops.
at::Tensor device_reductions(const at::Tensor& t) {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  if (t.is_cuda()) {
    if (auto fused = fused_reductions(t)) return *std::move(fused);
  }
#endif
  const at::Tensor d = t.to(c10::ScalarType::Double);
  const at::Tensor nan = d.isnan();
  const double inf = std::numeric_limits<double>::infinity();
  const auto dbl = c10::ScalarType::Double;
  return at::stack({at::where(nan, -inf, d).max(), at::where(nan, inf, d).min(), d.sum(),
                    d.mul(d).sum(), nan.sum().to(dbl), d.isposinf().sum().to(dbl),
                    d.isneginf().sum().to(dbl), d.eq(0).sum().to(dbl)});
}

TensorStats unpack_reductions(const double* v, uint64_t count) {
  TensorStats s;
  s.count = count;
  s.nan_count = static_cast<uint64_t>(v[4]);
  const bool all_nan = s.nan_count == s.count;  // compute_stats: NaN extrema then
  s.max = all_nan ? std::nan("") : v[0];
  s.min = all_nan ? std::nan("") : v[1];
  s.sum = v[2];
  s.sumsq = v[3];
  s.pos_inf_count = static_cast<uint64_t>(v[5]);
  s.neg_inf_count = static_cast<uint64_t>(v[6]);
  s.zero_count = static_cast<uint64_t>(v[7]);
  return s;
}

void device_stats(const at::Tensor& t, TensorLeaf& leaf) {
  const at::Tensor packed = device_reductions(t).to(at::kCPU);
  leaf.stats = unpack_reductions(packed.data_ptr<double>(), static_cast<uint64_t>(t.numel()));
}

// What arrived on the host: the eight reductions (packed), or the tensor's own elements.
TensorStats stats_of_arrived(const void* host, bool packed, DType dtype, uint64_t count) {
  if (packed) return unpack_reductions(static_cast<const double*>(host), count);
  StatsOptions single;
  single.threads = 1;
  return compute_stats(host, count, dtype, single);
}

// CUDA tensors of up to this many elements are copied to pinned host memory and summarised there
// by compute_stats (one transfer enqueued per tensor, the host's exact definitions); larger ones
// are reduced on the device and only the eight results come back.
constexpr int64_t kHostCopyMaxElements = int64_t{1} << 16;

// A pinned host copy of t (contiguous, t's dtype) enqueued on t's stream, and the event after it
// (the ATen route; without a device, a plain copy).
class AsyncHostCopy final : public ArrivingBytes {
 public:
  explicit AsyncHostCopy(const at::Tensor& t) {
    const bool cuda = t.is_cuda();
    host_ = at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type()).pinned_memory(cuda));
    // Lazily negated/conjugated views are resolved on the device first: a non-blocking copy_
    // of one would negate the host buffer before the bytes have arrived.
    host_.copy_(t.resolve_conj().resolve_neg(), /*non_blocking=*/cuda);
    if (cuda) {
      c10::impl::VirtualGuardImpl impl(t.device().type());
      done_.emplace(t.device().type());
      done_->record(impl.getStream(t.device()));
    }
  }

  const void* wait() override {
    if (done_) {
      while (!done_->query()) std::this_thread::sleep_for(std::chrono::microseconds(20));
      done_.reset();
    }
    return host_.data_ptr();
  }

 private:
  at::Tensor host_;
  std::optional<c10::Event> done_;
};

// Statistics whose input (bytes or reductions) is on its way to the host through an ATen copy;
// resolve() (writer thread) waits for it, so the training thread never waits for the device.
class EnqueuedStats final : public DeferredStats {
 public:
  EnqueuedStats(const at::Tensor& src, bool packed, DType dtype, uint64_t count)
      : copy_(std::make_unique<AsyncHostCopy>(src)),
        packed_(packed),
        dtype_(dtype),
        count_(count) {}

  // Leaves that share this (the per-version cache hands it out again) resolve it once; the
  // training thread may resolve it too (overflow_check, NUMPROBE_SYNC_DEVICE_STATS).
  TensorStats resolve() override {
    std::lock_guard<std::mutex> lk(mu_);
    if (!copy_) return stats_;
    stats_ = stats_of_arrived(copy_->wait(), packed_, dtype_, count_);
    copy_.reset();
    return stats_;
  }

 private:
  std::unique_ptr<AsyncHostCopy> copy_;  // null once resolved
  bool packed_;
  DType dtype_;
  uint64_t count_;
  std::mutex mu_;
  TensorStats stats_;
};

#ifdef NUMPROBE_CUDA_STATS_KERNEL
// The same through the pinned staging ring: one cudaMemcpyAsync and one pooled event.
class StagedStats final : public DeferredStats {
 public:
  StagedStats(const cuda_stats::StagedCopy& copy, bool packed, DType dtype, uint64_t count)
      : copy_(copy), packed_(packed), dtype_(dtype), count_(count) {}
  StagedStats(const StagedStats&) = delete;
  StagedStats& operator=(const StagedStats&) = delete;

  // Never resolved (a leaf dropped): the copy may still be writing into the ring.
  ~StagedStats() override {
    if (copy_.reserved == 0) return;
    wait();
    cuda_stats::release_staged(copy_);
  }

  TensorStats resolve() override {
    std::lock_guard<std::mutex> lk(mu_);
    if (copy_.reserved == 0) return stats_;
    wait();
    stats_ = stats_of_arrived(copy_.host, packed_, dtype_, count_);
    cuda_stats::release_staged(copy_);
    return stats_;
  }

 private:
  void wait() const {
    while (!cuda_stats::staged_ready(copy_))
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

  cuda_stats::StagedCopy copy_;  // reserved == 0 once resolved
  bool packed_;
  DType dtype_;
  uint64_t count_;
  std::mutex mu_;
  TensorStats stats_;
};

// src (dense CUDA memory) into the staging ring; nullptr when the ring is full or CUDA refuses.
std::shared_ptr<DeferredStats> stage(const at::Tensor& src, bool packed, DType dt, uint64_t count) {
  if (!has_own_memory(src)) return nullptr;
  const c10::DeviceGuard on_device(src.device());
  void* stream = c10::cuda::getCurrentCUDAStream(src.device().index()).stream();
  cuda_stats::StagedCopy copy;
  const size_t bytes = static_cast<size_t>(src.numel()) * src.element_size();
  if (!cuda_stats::stage_copy(src.data_ptr(), bytes, src.device().index(), stream, copy))
    return nullptr;
  return std::make_shared<StagedStats>(copy, packed, dt, count);
}
#endif

PendingTensorData copy_to_host_async(const at::Tensor& t) {
  auto copy = std::make_shared<AsyncHostCopy>(t);
  PendingTensorData p;
  p.arriving = copy;
  p.owner = std::shared_ptr<const void>(copy, copy.get());
  return p;
}

// Enqueues the copy of t's elements (small tensors) or of its eight reductions (large ones) to
// the host: through the staging ring where built, else (or when it is full) through ATen.
std::shared_ptr<DeferredStats> enqueue_stats(const at::Tensor& t, DType dt) {
  const bool packed = !(t.numel() <= kHostCopyMaxElements && dt != DType::kUnknown);
  const at::Tensor src = packed ? device_reductions(t) : dense_elements(t);
  const auto count = static_cast<uint64_t>(t.numel());
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  if (t.is_cuda() && !aten_route()) {
    if (auto staged = stage(src, packed, dt, count)) return staged;
  }
#endif
  return std::make_shared<EnqueuedStats>(src, packed, dt, count);
}

// Statistics of the last tensors seen on this thread. One tensor is typically dumped several times
// in a row (an op's output is the next op's input; a weight is an input of every call of its
// layer), and often through another TensorImpl that views the same memory (a transpose, the
// views full module backward hooks put around a module's inputs and outputs), so large tensors
// are summarised once per version of their memory.
//
// A tensor that is non-overlapping and dense covers exactly the numel elements from its data
// pointer on, in some order; the statistics do not depend on the order, so every such view of a
// block shares one slot, keyed by (data pointer, numel, dtype, version counter, version). The
// version counter is shared by all views of a storage and bumped by every in-place write through
// them. A slot keeps the version counter alive (its address cannot be reused by another one) and a
// weak reference to the storage (expired: the memory may belong to someone else now). Other
// tensors (gaps, broadcast strides) are keyed by their TensorImpl as well. Slots written in an
// earlier step are ignored (a step boundary is where optimizers write weights, possibly through
// `.data`, which has its own version counter).
struct CachedStats {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage{
      c10::weak_intrusive_ptr<c10::StorageImpl>(c10::intrusive_ptr<c10::StorageImpl>())};
  c10::weak_intrusive_ptr<c10::TensorImpl> impl{
      c10::weak_intrusive_ptr<c10::TensorImpl>(c10::intrusive_ptr<c10::TensorImpl>())};
  c10::VariableVersion counter{c10::VariableVersion::DISABLED};
  const void* counter_key = nullptr;
  const c10::TensorImpl* impl_key = nullptr;  // nullptr for dense tensors
  uint32_t version = 0;
  const void* data = nullptr;
  int64_t numel = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  uint64_t generation = 0;
  TensorStats stats;
  std::shared_ptr<DeferredStats> deferred;  // set: `stats` is not known yet
};
constexpr size_t kCacheSlots = 64;
constexpr int64_t kCacheMinElements = int64_t{1} << 16;
thread_local CachedStats t_cache[kCacheSlots];
thread_local size_t t_cache_next = 0;
std::atomic<uint64_t> g_generation{1};

// Leaf counters, one block per recording thread: a locked add per tensor leaf drained the store
// buffer on every call (perf put ~3 % of a per-op captured step on it). The owner updates its
// block with plain relaxed stores; leaf_counters() sums the live blocks and what exited threads
// left (a thread's block folds into g_retired_counts when the thread ends).
struct alignas(64) LeafCountBlock {
  std::atomic<uint64_t> computed{0}, cached{0}, bytes{0};
};
std::mutex g_count_blocks_mu;
std::vector<LeafCountBlock*> g_count_blocks;
LeafCountBlock g_retired_counts;  // guarded by g_count_blocks_mu

void bump(std::atomic<uint64_t>& c, uint64_t n) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct ThreadCounts {
  LeafCountBlock block;
  ThreadCounts() {
    std::lock_guard<std::mutex> lk(g_count_blocks_mu);
    g_count_blocks.push_back(&block);
  }
  ~ThreadCounts() {
    std::lock_guard<std::mutex> lk(g_count_blocks_mu);
    bump(g_retired_counts.computed, block.computed.load(std::memory_order_relaxed));
    bump(g_retired_counts.cached, block.cached.load(std::memory_order_relaxed));
    bump(g_retired_counts.bytes, block.bytes.load(std::memory_order_relaxed));
    g_count_blocks.erase(std::find(g_count_blocks.begin(), g_count_blocks.end(), &block));
  }
};

LeafCountBlock& thread_counts() {
  thread_local ThreadCounts counts;
  return counts.block;
}

// The address of the counter object a VariableVersion points to: its identity (views share it).
// VariableVersion holds exactly one intrusive_ptr and exposes no accessor.
const void* counter_identity(const c10::VariableVersion& v) {
  static_assert(sizeof(c10::VariableVersion) == sizeof(void*), "VariableVersion layout changed");
  const void* p;
  std::memcpy(&p, static_cast<const void*>(&v), sizeof p);
  return p;
}

struct CacheKey {
  const void* counter;
  const c10::TensorImpl* impl;
  uint32_t version;
  const void* data;
  int64_t numel;
  c10::ScalarType dtype;
};

// False for tensors the cache cannot key safely (inference tensors have no version counter).
bool cache_key(const at::Tensor& t, bool dense, CacheKey& k) {
  if (t.numel() < kCacheMinElements || t.is_inference()) return false;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->has_storage()) return false;
  const c10::VariableVersion& vc = impl->version_counter();
  if (!vc.enabled()) return false;
  k.counter = counter_identity(vc);
  k.impl = dense ? nullptr : impl;
  k.version = vc.current_version();
  k.data = t.data_ptr();
  k.numel = t.numel();
  k.dtype = t.scalar_type();
  return true;
}

const CachedStats* cache_find(const CacheKey& k) {
  const uint64_t gen = g_generation.load(std::memory_order_relaxed);
  for (CachedStats& c : t_cache) {
    if (c.counter_key == k.counter && c.version == k.version && c.data == k.data &&
        c.numel == k.numel && c.dtype == k.dtype && c.impl_key == k.impl && c.generation == gen &&
        !c.storage.expired() && (!k.impl || !c.impl.expired()))
      return &c;
  }
  return nullptr;
}

void cache_put(const at::Tensor& t, const CacheKey& k, const TensorStats& stats,
               std::shared_ptr<DeferredStats> deferred = nullptr) {
  CachedStats& c = t_cache[t_cache_next++ % kCacheSlots];
  c.storage = t.storage().getWeakStorageImpl();
  c.impl = k.impl ? c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr())
                  : c10::weak_intrusive_ptr<c10::TensorImpl>(c10::intrusive_ptr<c10::TensorImpl>());
  c.counter = t.unsafeGetTensorImpl()->version_counter();
  c.counter_key = k.counter;
  c.impl_key = k.impl;
  c.version = k.version;
  c.data = k.data;
  c.numel = k.numel;
  c.dtype = k.dtype;
  c.generation = g_generation.load(std::memory_order_relaxed);
  c.stats = stats;
  c.deferred = std::move(deferred);
}

}  // namespace

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
  if (use_cache) {
    if (const CachedStats* hit = cache_find(key)) {
      leaf.stats = hit->stats;
      leaf.deferred = hit->deferred;
      bump(thread_counts().cached, 1);
      return;
    }
  }
  LeafCountBlock& counts = thread_counts();
  bump(counts.computed, 1);
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
    bump(counts.bytes, static_cast<uint64_t>(n) * t.element_size());
    if (use_cache) cache_put(t, key, leaf.stats);
    return;
  }
  if (dt == DType::kUnknown && !t.is_floating_point()) {
    leaf.has_stats = false;  // quantized and other exotic dtypes
    return;
  }
  static const bool sync = env_flag("NUMPROBE_SYNC_DEVICE_STATS");
  if (t.is_cuda() || (on_cpu && defer_cpu)) {
    leaf.deferred = enqueue_stats(t.detach(), dt);
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

void next_stats_generation() {
  g_generation.fetch_add(1, std::memory_order_relaxed);
}

bool cuda_stats_kernel_built() {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  return true;
#else
  return false;
#endif
}

LeafCounters leaf_counters() {
  LeafCounters c;
  std::lock_guard<std::mutex> lk(g_count_blocks_mu);
  c.computed = g_retired_counts.computed.load(std::memory_order_relaxed);
  c.cached = g_retired_counts.cached.load(std::memory_order_relaxed);
  c.bytes = g_retired_counts.bytes.load(std::memory_order_relaxed);
  for (const LeafCountBlock* b : g_count_blocks) {
    c.computed += b->computed.load(std::memory_order_relaxed);
    c.cached += b->cached.load(std::memory_order_relaxed);
    c.bytes += b->bytes.load(std::memory_order_relaxed);
  }
  return c;
}

}  // namespace numprobe::capture
