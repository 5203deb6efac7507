#include "torch/stats_cache.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

namespace numprobe::capture {
namespace {

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
  std::atomic<uint64_t> computed{0}, cached{0}, bytes{0}, batches{0}, batched{0};
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
    bump(g_retired_counts.batches, block.batches.load(std::memory_order_relaxed));
    bump(g_retired_counts.batched, block.batched.load(std::memory_order_relaxed));
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

}  // namespace

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

bool cache_find(const CacheKey& k, TensorStats& stats, std::shared_ptr<DeferredStats>& deferred) {
  const uint64_t gen = g_generation.load(std::memory_order_relaxed);
  for (CachedStats& c : t_cache) {
    if (c.counter_key == k.counter && c.version == k.version && c.data == k.data &&
        c.numel == k.numel && c.dtype == k.dtype && c.impl_key == k.impl && c.generation == gen &&
        !c.storage.expired() && (!k.impl || !c.impl.expired())) {
      stats = c.stats;
      deferred = c.deferred;
      return true;
    }
  }
  return false;
}

void cache_put(const at::Tensor& t, const CacheKey& k, const TensorStats& stats,
               std::shared_ptr<DeferredStats> deferred) {
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

void count_cached() {
  bump(thread_counts().cached, 1);
}

void count_computed() {
  bump(thread_counts().computed, 1);
}

void count_bytes(uint64_t n) {
  bump(thread_counts().bytes, n);
}

void count_batch(uint64_t items) {
  LeafCountBlock& b = thread_counts();
  bump(b.batches, 1);
  bump(b.batched, items);
}

void next_stats_generation() {
  g_generation.fetch_add(1, std::memory_order_relaxed);
}

LeafCounters leaf_counters() {
  LeafCounters c;
  std::lock_guard<std::mutex> lk(g_count_blocks_mu);
  c.computed = g_retired_counts.computed.load(std::memory_order_relaxed);
  c.cached = g_retired_counts.cached.load(std::memory_order_relaxed);
  c.bytes = g_retired_counts.bytes.load(std::memory_order_relaxed);
  c.batches = g_retired_counts.batches.load(std::memory_order_relaxed);
  c.batched = g_retired_counts.batched.load(std::memory_order_relaxed);
  for (const LeafCountBlock* b : g_count_blocks) {
    c.computed += b->computed.load(std::memory_order_relaxed);
    c.cached += b->cached.load(std::memory_order_relaxed);
    c.bytes += b->bytes.load(std::memory_order_relaxed);
    c.batches += b->batches.load(std::memory_order_relaxed);
    c.batched += b->batched.load(std::memory_order_relaxed);
  }
  return c;
}

}  // namespace numprobe::capture
