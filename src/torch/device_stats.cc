#include "torch/device_stats.h"

#include <ATen/Functions.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

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

#include "capture/stats_batch_host.h"
#include "core/stats.h"
#include "torch/dtype_names.h"

#ifdef NUMPROBE_CUDA_STATS_KERNEL
#include <c10/core/DeviceGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "torch/cuda/device_stats_kernel.h"
#include "torch/cuda/pinned_staging.h"
#endif

namespace numprobe::capture {

// NUMPROBE_SYNC_DEVICE_STATS=1: wait for device statistics on the training thread (debugging).
// NUMPROBE_DEFER_CPU_STATS=1: route CPU tensors through the deferred path (tests of that path on
// machines without a GPU; there the copies complete at once and no event is needed).
// NUMPROBE_ATEN_DEVICE_STATS=1: reduce CUDA tensors with ATen ops and copy through ATen, not
// the fused kernel and the pinned staging ring (tests compare the two).
bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] == '1';
}

bool has_own_memory(const at::Tensor& t) {
  return t.has_storage() && !t._is_zerotensor() && !t.key_set().has(c10::DispatchKey::Python) &&
         t.data_ptr() != nullptr;
}

at::Tensor dense_elements(const at::Tensor& t) {
  return !t.is_neg() && t.is_non_overlapping_and_dense() ? t : t.resolve_neg().contiguous();
}

namespace {

std::atomic<bool> g_kernel_broken{false};

#ifdef NUMPROBE_CUDA_STATS_KERNEL
bool aten_route() {
  static const bool on = env_flag("NUMPROBE_ATEN_DEVICE_STATS");
  return on;
}

// The eight reductions by the fused kernel on t's current stream; nullopt where it cannot run
// (dtype, or a launch error such as a GPU newer than the kernel's architectures: reported once,
// and the ATen reductions take over).
std::optional<at::Tensor> fused_reductions(const at::Tensor& t) {
  const DType dt = to_dtype(t.scalar_type());
  if (aten_route() || dt == DType::kUnknown || g_kernel_broken.load(std::memory_order_relaxed) ||
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
    note_kernel_failure(err);
    return std::nullopt;
  }
  return work.narrow(0, int64_t{blocks} * 8, 8);
}
#endif

}  // namespace

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

void note_kernel_failure(int cuda_error) {
  if (!g_kernel_broken.exchange(true))
    std::fprintf(stderr,
                 "numprobe: the fused CUDA statistics kernel failed to launch (CUDA error %d); "
                 "using ATen reductions\n",
                 cuda_error);
}

bool fused_kernel_reads(const at::Tensor& t, DType dt) {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  return t.is_cuda() && !aten_route() && stats_batch::batchable(dt) &&
         !g_kernel_broken.load(std::memory_order_relaxed) && has_own_memory(t);
#else
  (void)t;
  (void)dt;
  return false;
#endif
}

void device_stats(const at::Tensor& t, TensorLeaf& leaf) {
  const at::Tensor packed = device_reductions(t).to(at::kCPU);
  leaf.stats =
      stats_batch::stats_of_fields(packed.data_ptr<double>(), static_cast<uint64_t>(t.numel()));
}

namespace {

// What arrived on the host: the eight reductions (packed), or the tensor's own elements.
TensorStats stats_of_arrived(const void* host, bool packed, DType dtype, uint64_t count) {
  if (packed) return stats_batch::stats_of_fields(static_cast<const double*>(host), count);
  StatsOptions single;
  single.threads = 1;
  return compute_stats(host, count, dtype, single);
}

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

}  // namespace

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

bool cuda_stats_kernel_built() {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  return true;
#else
  return false;
#endif
}

}  // namespace numprobe::capture
