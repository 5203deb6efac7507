#include "capture/torch/tensor_leaf.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "numprobe/hash.h"
#include "numprobe/stats.h"
#include "numprobe/worker_pool.h"

namespace numprobe::capture {
namespace {

DType to_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Double:
      return DType::kF64;
    case c10::ScalarType::Float:
      return DType::kF32;
    case c10::ScalarType::Half:
      return DType::kF16;
    case c10::ScalarType::BFloat16:
      return DType::kBF16;
    case c10::ScalarType::Char:
      return DType::kI8;
    case c10::ScalarType::Short:
      return DType::kI16;
    case c10::ScalarType::Int:
      return DType::kI32;
    case c10::ScalarType::Long:
      return DType::kI64;
    case c10::ScalarType::Byte:
      return DType::kU8;
    case c10::ScalarType::Bool:
      return DType::kBool;
    default:
      return DType::kUnknown;
  }
}

// Statistics of a tensor that is not in CPU memory (or of a dtype our kernel lacks): ATen
// reductions in float32 (float64 stays float64), one device->host copy of 4 numbers.
void device_stats(const at::Tensor& t, TensorLeaf& leaf) {
  at::Tensor f = t.scalar_type() == c10::ScalarType::Double ? t : t.to(c10::ScalarType::Float);
  at::Tensor packed = at::stack({f.max(), f.min(), f.mean(), f.norm()}).to(at::kCPU, at::kDouble);
  const double* v = packed.data_ptr<double>();
  leaf.stats.max = v[0];
  leaf.stats.min = v[1];
  leaf.stats.count = static_cast<uint64_t>(t.numel());
  leaf.stats.sum = v[2] * static_cast<double>(leaf.stats.count);
  leaf.stats.sumsq = v[3] * v[3];
  if (!std::isfinite(v[0]) || !std::isfinite(v[1])) {
    leaf.stats.nan_count = static_cast<uint64_t>(f.isnan().sum().item<int64_t>());
    leaf.stats.pos_inf_count = static_cast<uint64_t>(f.isposinf().sum().item<int64_t>());
    leaf.stats.neg_inf_count = static_cast<uint64_t>(f.isneginf().sum().item<int64_t>());
  }
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
};
constexpr size_t kCacheSlots = 64;
constexpr int64_t kCacheMinElements = int64_t{1} << 16;
thread_local CachedStats t_cache[kCacheSlots];
thread_local size_t t_cache_next = 0;
std::atomic<uint64_t> g_generation{1};

std::atomic<uint64_t> g_computed{0}, g_cached{0}, g_bytes{0};

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

const TensorStats* cache_find(const CacheKey& k) {
  const uint64_t gen = g_generation.load(std::memory_order_relaxed);
  for (CachedStats& c : t_cache) {
    if (c.counter_key == k.counter && c.version == k.version && c.data == k.data &&
        c.numel == k.numel && c.dtype == k.dtype && c.impl_key == k.impl && c.generation == gen &&
        !c.storage.expired() && (!k.impl || !c.impl.expired()))
      return &c.stats;
  }
  return nullptr;
}

void cache_put(const at::Tensor& t, const CacheKey& k, const TensorStats& stats) {
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
}

}  // namespace

const char* torch_dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Double:
      return "torch.float64";
    case c10::ScalarType::Float:
      return "torch.float32";
    case c10::ScalarType::Half:
      return "torch.float16";
    case c10::ScalarType::BFloat16:
      return "torch.bfloat16";
    case c10::ScalarType::Char:
      return "torch.int8";
    case c10::ScalarType::Short:
      return "torch.int16";
    case c10::ScalarType::Int:
      return "torch.int32";
    case c10::ScalarType::Long:
      return "torch.int64";
    case c10::ScalarType::Byte:
      return "torch.uint8";
    case c10::ScalarType::Bool:
      return "torch.bool";
    case c10::ScalarType::ComplexFloat:
      return "torch.complex64";
    case c10::ScalarType::ComplexDouble:
      return "torch.complex128";
    case c10::ScalarType::ComplexHalf:
      return "torch.complex32";
    default:
      return "torch.unknown";
  }
}

void fill_tensor_leaf(const at::Tensor& t, const LeafRequest& req, TensorLeaf& leaf) {
  leaf.dtype = torch_dtype_name(t.scalar_type());
  auto sizes = t.sizes();
  leaf.shape.assign(sizes.begin(), sizes.end());
  leaf.requires_grad = t.requires_grad();
  const int64_t n = t.numel();
  if (n == 0 || req.data == LeafData::kNone) return;
  const DType dt = to_dtype(t.scalar_type());
  const bool on_cpu = t.device().is_cpu() && t.layout() == c10::kStrided;

  if (req.data == LeafData::kMd5 || !req.save_as.empty()) {
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

  leaf.has_stats = true;
  leaf.bool_stats = t.scalar_type() == c10::ScalarType::Bool;
  // Dense tensors (contiguous, or a permutation of that: transposes) are read in place on the
  // CPU. A lazily negated view (_neg_view) is not its memory: keyed as itself, resolved first.
  const bool dense = t.layout() == c10::kStrided && !t.is_neg() && t.is_non_overlapping_and_dense();
  CacheKey key;
  const bool use_cache = cache_key(t, dense, key);
  if (use_cache) {
    if (const TensorStats* hit = cache_find(key)) {
      leaf.stats = *hit;
      g_cached.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  g_computed.fetch_add(1, std::memory_order_relaxed);
  if (on_cpu && dt != DType::kUnknown) {
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
    g_bytes.fetch_add(static_cast<uint64_t>(n) * t.element_size(), std::memory_order_relaxed);
    if (use_cache) cache_put(t, key, leaf.stats);
    return;
  }
  if (t.is_complex() || (dt == DType::kUnknown && !t.is_floating_point())) {
    leaf.has_stats = false;  // complex: msprobe's stats of abs() are not reproduced yet
    return;
  }
  device_stats(t.detach(), leaf);
  if (use_cache) cache_put(t, key, leaf.stats);
}

void next_stats_generation() {
  g_generation.fetch_add(1, std::memory_order_relaxed);
}

LeafCounters leaf_counters() {
  LeafCounters c;
  c.computed = g_computed.load(std::memory_order_relaxed);
  c.cached = g_cached.load(std::memory_order_relaxed);
  c.bytes = g_bytes.load(std::memory_order_relaxed);
  return c;
}

}  // namespace numprobe::capture
