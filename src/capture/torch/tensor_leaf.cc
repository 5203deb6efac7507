#include "capture/torch/tensor_leaf.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>

#include <cmath>
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
// layer), so large tensors are summarised once per version. The weak reference keeps the
// TensorImpl's address from being reused by another tensor while it is cached; the version
// counter (shared by all views of a storage) changes on every in-place write.
struct CachedStats {
  c10::weak_intrusive_ptr<c10::TensorImpl> impl{
      c10::weak_intrusive_ptr<c10::TensorImpl>(c10::intrusive_ptr<c10::TensorImpl>())};
  const c10::TensorImpl* key = nullptr;
  uint32_t version = 0;
  const void* data = nullptr;
  int64_t numel = 0;
  TensorStats stats;
};
constexpr size_t kCacheSlots = 64;
constexpr int64_t kCacheMinElements = int64_t{1} << 16;
thread_local CachedStats t_cache[kCacheSlots];
thread_local size_t t_cache_next = 0;

bool cacheable(const at::Tensor& t) {
  return t.numel() >= kCacheMinElements && !t.is_inference();
}

const TensorStats* cache_find(const at::Tensor& t) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const uint32_t version = impl->version_counter().current_version();
  for (CachedStats& c : t_cache) {
    if (c.key == impl && c.version == version && c.data == t.data_ptr() && c.numel == t.numel() &&
        !c.impl.expired())
      return &c.stats;
  }
  return nullptr;
}

void cache_put(const at::Tensor& t, const TensorStats& stats) {
  CachedStats& c = t_cache[t_cache_next++ % kCacheSlots];
  c.impl = c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr());
  c.key = t.unsafeGetTensorImpl();
  c.version = t.unsafeGetTensorImpl()->version_counter().current_version();
  c.data = t.data_ptr();
  c.numel = t.numel();
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
  const bool use_cache = cacheable(t);
  if (use_cache) {
    if (const TensorStats* hit = cache_find(t)) {
      leaf.stats = *hit;
      return;
    }
  }
  if (on_cpu && dt != DType::kUnknown) {
    at::Tensor c = t.is_contiguous() ? t : t.contiguous();
    StatsOptions opt;
    // Large tensors are split over every core: statistics are memory-bound and a training
    // process rarely keeps all cores' memory bandwidth busy. The workers persist (a thread start
    // per tensor cost ~2 % of a transformer step); below 1M elements one thread is faster.
    static WorkerPool* pool =
        new WorkerPool(std::max(1u, std::thread::hardware_concurrency()) - 1);  // never freed
    opt.threads = 0;
    opt.pool = pool;
    opt.parallel_threshold = size_t{1} << 20;
    leaf.stats = compute_stats(c.data_ptr(), static_cast<size_t>(n), dt, opt);
    if (use_cache) cache_put(t, leaf.stats);
    return;
  }
  if (t.is_complex() || (dt == DType::kUnknown && !t.is_floating_point())) {
    leaf.has_stats = false;  // complex: msprobe's stats of abs() are not reproduced yet
    return;
  }
  device_stats(t.detach(), leaf);
  if (use_cache) cache_put(t, leaf.stats);
}

}  // namespace numprobe::capture
