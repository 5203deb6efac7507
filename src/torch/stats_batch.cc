#include "torch/stats_batch.h"

#include <ATen/Functions.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <c10/core/StreamGuard.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "capture/stats_batch_host.h"
#include "capture/stats_batch_plan.h"
#include "core/stats.h"
#include "torch/device_stats.h"
#include "torch/stats_cache.h"

#ifdef NUMPROBE_CUDA_STATS_KERNEL
#include <c10/core/DeviceGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "torch/cuda/device_stats_kernel.h"
#include "torch/cuda/pinned_staging.h"
#endif

namespace numprobe::capture {
namespace {

using stats_batch::kFields;
using stats_batch::kMaxItems;

// Sections of at most this many small tensors are copied tensor by tensor (a copy each) rather
// than reduced (a launch, then a copy of the results): two copies cost about what a launch and a
// copy do, and the host kernel's statistics are exact.
constexpr int kMaxCopiedItems = 2;

void pause() {
  std::this_thread::sleep_for(std::chrono::microseconds(20));
}

// Launches that need a covering event are numbered in launch order (over all threads): a batch
// numbered n was enqueued on its stream before the counter reached n.
std::atomic<uint64_t> g_launches{0};

// One event recorded on a stream by the thread that waits (the writer): it covers every batch
// launched there before it was recorded (stream order), so one event serves the many batches the
// writer meets after it. Back to the pool when the last batch that uses it lets go.
struct Cover {
  void* event = nullptr;  // null: nothing to wait for (host runs; a stream that was waited for)
  int device = -1;

  Cover() = default;
  Cover(const Cover&) = delete;
  Cover& operator=(const Cover&) = delete;
  ~Cover() {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
    cuda_stats::release_pooled_event(device, event);
#endif
  }
  bool ready() const {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
    return !event || cuda_stats::pooled_event_ready(event);
#else
    return true;
#endif
  }
};

class Batch;

// One leaf's share of a batch.
class BatchItem final : public DeferredStats {
 public:
  TensorStats resolve() override;

  Batch* batch = nullptr;
  int index = 0;
};

// One section's results, shared by the leaves of its items through aliasing pointers to their
// BatchItem: one allocation per section, none per tensor. The thread that gathered the section
// launches it; resolve() runs on any thread (the writer, mostly) and finds or records the event
// that covers it.
class Batch {
 public:
  Batch() = default;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();

  TensorStats resolve(int k);

  std::array<BatchItem, kMaxItems> items;
  c10::Device device{c10::kCPU};
  void* stream = nullptr;                 // the raw stream the kernel and copies go on
  std::optional<c10::Stream> c10_stream;  // the same, for ATen's allocations and fallbacks

  // Set by the launch before `launched` is released.
  std::atomic<bool> launched{false};
  int count = 0;
  uint64_t counts[kMaxItems] = {};
  bool needs_cover = false;    // its results arrive through the ring, without an event of their own
  uint64_t launch_number = 0;  // where needs_cover: its place in g_launches
  bool copied = false;         // the ring holds each item's elements, not eight reductions each
  DType copied_dtype[kMaxCopiedItems] = {};
  std::vector<double> fields;                              // host runs: filled at the launch
  std::vector<std::shared_ptr<DeferredStats>> per_tensor;  // the batch did not launch: own routes
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  cuda_stats::StagedCopy staged;                                 // the kernel's results
  std::array<cuda_stats::StagedCopy, kMaxCopiedItems> copies{};  // or the items' elements
#endif
  PendingTensorData aten_copy;  // the results through an ATen copy (the ring was full)

 private:
  void arrive();

  std::mutex mu_;  // the first resolve unpacks for every item
  bool arrived_ = false;
  std::shared_ptr<Cover> cover_;
  std::vector<TensorStats> results_;
};

// What this thread has gathered since its last launch.
struct Section {
  std::shared_ptr<Batch> batch;  // null: nothing gathered
  stats_batch::Table table;
  std::vector<at::Tensor> keep;  // the items' memory, alive until the launch has read it
  bool exiting = false;          // the thread's end: its counters are gone

  ~Section();
};

thread_local Section t_section;
// Whether t_section holds a batch: a plain flag, so that sealing (every hook's InternalGuard, every
// submitted entry) costs no access to t_section on threads and runs that gather nothing.
thread_local bool t_gathering = false;

TensorStats nan_stats(uint64_t count) {
  TensorStats s;
  s.count = count;
  s.nan_count = count;
  s.max = s.min = s.sum = s.sumsq = std::nan("");
  return s;
}

#ifdef NUMPROBE_CUDA_STATS_KERNEL
// Each item's elements into the ring, without events; false (nothing left in flight) when the
// ring has no room.
bool copy_each(const Section& s, Batch& b) {
  for (int k = 0; k < s.table.count; ++k) {
    const at::Tensor& t = s.keep[static_cast<size_t>(k)];
    b.copied_dtype[k] = static_cast<DType>(s.table.items[k].dtype);
    if (!cuda_stats::stage_copy_uncovered(t.data_ptr(),
                                          static_cast<size_t>(t.numel()) * t.element_size(),
                                          b.device.index(), b.stream, b.copies[k])) {
      if (k > 0) cuda_stats::wait_for_stream(b.stream);  // the earlier copies are in flight
      for (int j = 0; j < k; ++j) cuda_stats::release_staged(b.copies[j]);
      return false;
    }
  }
  b.copied = true;
  return true;
}

// The section on its stream: its tensors copied (copy_each), or the kernel over the table and its
// results copied into the ring; no event (the resolving thread records one that covers it). False
// when nothing was enqueued.
bool launch_on_device(const Section& s, Batch& b, bool copied) {
  if (copied) {
    b.needs_cover = copy_each(s, b);
    return b.needs_cover;
  }
  const int64_t results = int64_t{s.table.count} * kFields;
  const int64_t first_result = int64_t{s.table.blocks} * kFields;
  at::Tensor work =
      at::empty({first_result + results}, at::TensorOptions().dtype(at::kDouble).device(b.device));
  const int err = cuda_stats::enqueue_batch_stats(s.table, work.data_ptr<double>(), b.stream);
  if (err == cuda_stats::kNotLaunched) return false;
  if (err != 0) {
    note_kernel_failure(err);
    return false;
  }
  if (!s.exiting) count_batch(static_cast<uint64_t>(s.table.count));
  // `work` may be freed once enqueued: the caching allocator hands its memory only to work
  // ordered after this on the same stream.
  b.needs_cover = cuda_stats::stage_copy_uncovered(work.data_ptr<double>() + first_result,
                                                   static_cast<size_t>(results) * sizeof(double),
                                                   b.device.index(), b.stream, b.staged);
  if (!b.needs_cover) b.aten_copy = copy_to_host_async(work.narrow(0, first_result, results));
  return true;
}
#endif

// The per-tensor route (ATen reductions and copies) for every item; an item that fails there too
// resolves as all-NaN rather than lose the step.
void each_by_its_own_route(const Section& s, Batch& b) {
  b.per_tensor.assign(static_cast<size_t>(s.table.count), nullptr);
  for (int k = 0; k < s.table.count; ++k) {
    try {
      b.per_tensor[static_cast<size_t>(k)] =
          enqueue_stats(s.keep[static_cast<size_t>(k)], static_cast<DType>(s.table.items[k].dtype));
    } catch (const std::exception&) {
    }
  }
}

void launch(Section& s) {
  if (!s.batch) return;
  std::shared_ptr<Batch> b = std::move(s.batch);
  t_gathering = false;
  b->count = s.table.count;
  for (int k = 0; k < s.table.count; ++k) b->counts[k] = static_cast<uint64_t>(s.table.items[k].n);
  bool copied = s.table.count <= kMaxCopiedItems;
  for (int k = 0; k < s.table.count; ++k)
    copied = copied && s.table.items[k].n <= kHostCopyMaxElements;
  // numprobe's own ops: no autograd, invisible to RecordFunction observers (profilers), and on
  // the stream the section's tensors were gathered on (the caching allocator ties `work` to the
  // current stream; the kernel must run on the same one).
  const at::NoGradGuard no_grad;
  const at::RecordFunctionGuard no_record(false);
  std::optional<c10::StreamGuard> on_stream;
  if (b->c10_stream) on_stream.emplace(*b->c10_stream);
  try {
    bool done = false;
    if (b->device.is_cpu()) {
      // The host run of the kernel's plan (NUMPROBE_DEFER_CPU_STATS=1), numbered and covered
      // like a device batch (with no event to wait for) so the tests run that bookkeeping too.
      b->fields.resize(static_cast<size_t>(s.table.count) * kFields);
      stats_batch::run_on_host(s.table, b->fields.data());
      if (!copied && !s.exiting) count_batch(static_cast<uint64_t>(s.table.count));
      b->needs_cover = true;
      done = true;
    }
#ifdef NUMPROBE_CUDA_STATS_KERNEL
    else {
      done = launch_on_device(s, *b, copied);
    }
#endif
    if (!done) each_by_its_own_route(s, *b);
  } catch (const std::exception&) {
    // A failed allocation or launch: each tensor by its own route.
    b->needs_cover = false;
    each_by_its_own_route(s, *b);
  }
  s.keep.clear();
  s.table.count = 0;
  s.table.blocks = 0;
  if (b->needs_cover) b->launch_number = g_launches.fetch_add(1, std::memory_order_acq_rel) + 1;
  b->launched.store(true, std::memory_order_release);
}

// An event recorded on b's stream now: it covers b (launched before) and whatever else the
// stream ran before it.
std::shared_ptr<Cover> cover_after(const Batch& b) {
  auto c = std::make_shared<Cover>();
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  if (!b.device.is_cpu()) {
    const c10::DeviceGuard on_device(b.device);
    c->device = b.device.index();
    c->event = cuda_stats::record_pooled_event(c->device, b.stream);
    if (!c->event) cuda_stats::wait_for_stream(b.stream);  // CUDA refused an event
  }
#else
  (void)b;
#endif
  return c;
}

// The event that covers b, for the thread that waits: the one it recorded last on b's stream
// where that was recorded after b's launch, else a new one (whose number is read before it is
// recorded, so every batch numbered up to it was enqueued before the event).
std::shared_ptr<Cover> covering(const Batch& b) {
  struct Last {
    c10::Device device;
    void* stream;
    uint64_t launches;
    std::shared_ptr<Cover> cover;
  };
  thread_local std::vector<Last> t_last;
  for (Last& l : t_last) {
    if (l.device != b.device || l.stream != b.stream) continue;
    if (b.launch_number <= l.launches) return l.cover;
    l.launches = g_launches.load(std::memory_order_acquire);
    l.cover = cover_after(b);
    return l.cover;
  }
  const uint64_t launches = g_launches.load(std::memory_order_acquire);
  t_last.push_back(Last{b.device, b.stream, launches, cover_after(b)});
  return t_last.back().cover;
}

Section::~Section() {
  exiting = true;
  try {
    launch(*this);  // a thread that ends inside a section: its leaves still get their values
  } catch (...) {
  }
}

TensorStats BatchItem::resolve() {
  return batch->resolve(index);
}

void Batch::arrive() {
  results_.resize(static_cast<size_t>(count));
  if (!per_tensor.empty()) {
    for (int k = 0; k < count; ++k) {
      const auto& own = per_tensor[static_cast<size_t>(k)];
      results_[static_cast<size_t>(k)] = own ? own->resolve() : nan_stats(counts[k]);
    }
    per_tensor.clear();
    return;
  }
  const double* v = fields.empty() ? nullptr : fields.data();
  if (needs_cover) {
    cover_ = covering(*this);
    while (!cover_->ready()) pause();
  }
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  if (staged.reserved != 0) {
    fields.assign(static_cast<const double*>(staged.host),
                  static_cast<const double*>(staged.host) + static_cast<size_t>(count) * kFields);
    cuda_stats::release_staged(staged);
    v = fields.data();
  }
  if (copied) {
    StatsOptions single;
    single.threads = 1;
    for (int k = 0; k < count; ++k) {
      results_[static_cast<size_t>(k)] =
          compute_stats(copies[k].host, counts[k], copied_dtype[k], single);
      cuda_stats::release_staged(copies[k]);
    }
    cover_.reset();
    return;
  }
#endif
  if (!v) v = static_cast<const double*>(aten_copy.bytes());
  for (int k = 0; k < count; ++k)
    results_[static_cast<size_t>(k)] =
        stats_batch::stats_of_fields(v + static_cast<size_t>(k) * kFields, counts[k]);
  aten_copy = PendingTensorData();
  fields.clear();
  cover_.reset();
}

TensorStats Batch::resolve(int k) {
  if (!launched.load(std::memory_order_acquire)) {
    if (t_section.batch.get() == this)
      launch(t_section);  // the gathering thread needs the values now (overflow_check)
    // Another thread's section: entries reach the writer only after a submit, which launches
    // first, so this wait is short. A long one means a path that skipped that: say so once.
    const auto long_wait = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!launched.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > long_wait) {
        static std::atomic<bool> told{false};
        if (!told.exchange(true))
          std::fprintf(stderr,
                       "numprobe: internal: waiting for a statistics batch its thread has not "
                       "launched\n");
      }
      pause();
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (!arrived_) {
    arrive();
    arrived_ = true;
  }
  return results_[static_cast<size_t>(k)];
}

Batch::~Batch() {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  // Never resolved (its leaves dropped): the copies may still be writing into the ring.
  if (staged.reserved != 0 || copies[0].reserved != 0) {
    const std::shared_ptr<Cover> done = cover_ ? cover_ : cover_after(*this);
    while (!done->ready()) pause();
    cuda_stats::release_staged(staged);
    for (auto& c : copies) cuda_stats::release_staged(c);
  }
#endif
}

}  // namespace

void seal_stats_batches() {
  if (t_gathering) launch(t_section);
}

std::shared_ptr<DeferredStats> batch_stats(const at::Tensor& t, DType dt) {
  static const bool off = [] {
    const char* v = std::getenv("NUMPROBE_BATCH_DEVICE_STATS");
    return v && v[0] == '0';
  }();
  if (off || !stats_batch::batchable(dt) || t.numel() == 0) return nullptr;
  void* stream = nullptr;
  std::optional<c10::Stream> c10_stream;
  if (t.device().is_cpu()) {
    static const bool defer_cpu = env_flag("NUMPROBE_DEFER_CPU_STATS");
    if (!defer_cpu || t.layout() != c10::kStrided || !has_own_memory(t)) return nullptr;
  } else {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
    if (!fused_kernel_reads(t, dt)) return nullptr;
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(t.device().index());
    stream = current.stream();
    c10_stream = current.unwrap();
#else
    return nullptr;
#endif
  }
  at::Tensor dense = dense_elements(t);
  Section& s = t_section;
  if (s.batch &&
      (s.batch->device != t.device() || s.batch->stream != stream || s.table.count == kMaxItems))
    launch(s);
  if (!s.batch) {
    s.batch = std::make_shared<Batch>();
    s.batch->device = t.device();
    s.batch->stream = stream;
    s.batch->c10_stream = c10_stream;
    t_gathering = true;
  }
  Batch& b = *s.batch;
  const int k = s.table.count;
  stats_batch::add_item(s.table, dense.data_ptr(), dense.numel(), dt);
  s.keep.push_back(std::move(dense));
  b.items[static_cast<size_t>(k)].batch = &b;
  b.items[static_cast<size_t>(k)].index = k;
  return std::shared_ptr<DeferredStats>(s.batch, &b.items[static_cast<size_t>(k)]);
}

}  // namespace numprobe::capture
