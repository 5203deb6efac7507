#include "torch/stats_batch.h"

#include <ATen/Functions.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
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

void pause() {
  std::this_thread::sleep_for(std::chrono::microseconds(20));
}

// One event recorded after a thread's launches on one stream: it covers every batch launched
// there before it (stream order). Back to the pool when the last batch it covers lets go.
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
// BatchItem: one allocation per section, none per tensor. The launch and the cover are made by
// the thread that gathered the section; resolve() runs on any thread (the writer, mostly).
class Batch {
 public:
  Batch() = default;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();

  TensorStats resolve(int k);

  std::array<BatchItem, kMaxItems> items;
  uint64_t counts[kMaxItems] = {};
  int count = 0;
  c10::Device device{c10::kCPU};
  void* stream = nullptr;

  // Set by the launch before `launched` is released.
  std::atomic<bool> launched{false};
  bool needs_cover = false;  // its results arrive through the ring, without an event of their own
  bool raw = false;          // the ring holds a lone tensor's elements, not eight reductions
  DType raw_dtype = DType::kUnknown;
  std::vector<double> fields;                              // host runs: filled at the launch
  std::vector<std::shared_ptr<DeferredStats>> per_tensor;  // the batch did not launch: own routes
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  cuda_stats::StagedCopy staged;
#endif
  PendingTensorData aten_copy;  // the results through an ATen copy (the ring was full)

  // Set by the cover before `covered` is released, under cover_mu.
  std::shared_ptr<Cover> cover;
  std::atomic<bool> covered{false};
  std::mutex cover_mu;

 private:
  void arrive();

  std::mutex mu_;  // the first resolve unpacks for every item
  bool arrived_ = false;
  std::vector<TensorStats> results_;
};

// What this thread has gathered since its outermost section opened, and its launched batches
// that no event covers yet.
struct Section {
  int depth = 0;
  std::shared_ptr<Batch> batch;  // null: nothing gathered
  stats_batch::Table table;
  std::vector<at::Tensor> keep;  // the items' memory, alive until the launch has read it
  c10::Device device{c10::kCPU};
  void* stream = nullptr;
  std::vector<std::shared_ptr<Batch>> uncovered;

  ~Section();
};

thread_local Section t_section;

TensorStats nan_stats(uint64_t count) {
  TensorStats s;
  s.count = count;
  s.nan_count = count;
  s.max = s.min = s.sum = s.sumsq = std::nan("");
  return s;
}

#ifdef NUMPROBE_CUDA_STATS_KERNEL
// The section on its stream: a lone small tensor's elements copied into the ring, else the
// kernel over the table and its results copied into the ring; neither with an event (the cover
// adds one). False when nothing was enqueued.
bool launch_on_device(const Section& s, Batch& b, bool alone) {
  const c10::DeviceGuard on_device(s.device);
  if (alone) {
    const at::Tensor& t = s.keep.front();
    b.raw = true;
    b.raw_dtype = static_cast<DType>(s.table.items[0].dtype);
    b.needs_cover = cuda_stats::stage_copy_uncovered(
        t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), s.device.index(), s.stream,
        b.staged);
    return b.needs_cover;
  }
  const int64_t results = int64_t{s.table.count} * kFields;
  const int64_t first_result = int64_t{s.table.blocks} * kFields;
  at::Tensor work =
      at::empty({first_result + results}, at::TensorOptions().dtype(at::kDouble).device(s.device));
  const int err = cuda_stats::enqueue_batch_stats(s.table, work.data_ptr<double>(), s.stream);
  if (err == cuda_stats::kNotLaunched) return false;
  if (err != 0) {
    note_kernel_failure(err);
    return false;
  }
  count_batch(static_cast<uint64_t>(s.table.count));
  // `work` may be freed once enqueued: the caching allocator hands its memory only to work
  // ordered after this on the same stream.
  b.needs_cover = cuda_stats::stage_copy_uncovered(work.data_ptr<double>() + first_result,
                                                   static_cast<size_t>(results) * sizeof(double),
                                                   s.device.index(), s.stream, b.staged);
  if (!b.needs_cover) b.aten_copy = copy_to_host_async(work.narrow(0, first_result, results));
  return true;
}
#endif

void launch(Section& s) {
  if (!s.batch) return;
  std::shared_ptr<Batch> b = std::move(s.batch);
  // A section of one small tensor: its elements are copied as they are (one copy, the host's
  // exact statistics), as the per-tensor route does, but without an event of its own.
  const bool alone = s.table.count == 1 && s.table.items[0].n <= kHostCopyMaxElements;
  try {
    bool done = false;
    if (s.device.is_cpu()) {
      // The host run of the kernel's plan (NUMPROBE_DEFER_CPU_STATS=1). It waits for a cover
      // like a device batch, so the tests hold the covering to what the device needs.
      b->fields.resize(static_cast<size_t>(s.table.count) * kFields);
      stats_batch::run_on_host(s.table, b->fields.data());
      if (!alone) count_batch(static_cast<uint64_t>(s.table.count));
      b->needs_cover = true;
      done = true;
    }
#ifdef NUMPROBE_CUDA_STATS_KERNEL
    else {
      done = launch_on_device(s, *b, alone);
    }
#endif
    if (!done) {  // each tensor by its own route (the ATen reductions)
      b->per_tensor.resize(static_cast<size_t>(s.table.count));
      for (int k = 0; k < s.table.count; ++k)
        b->per_tensor[static_cast<size_t>(k)] = enqueue_stats(
            s.keep[static_cast<size_t>(k)], static_cast<DType>(s.table.items[k].dtype));
    }
  } catch (const std::exception&) {
    // A failed allocation or copy: the items resolve as all-NaN rather than lose the step.
    b->needs_cover = false;
    b->per_tensor.assign(static_cast<size_t>(s.table.count), nullptr);
  }
  s.keep.clear();
  s.table.count = 0;
  s.table.blocks = 0;
  if (b->needs_cover) s.uncovered.push_back(b);
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

void set_cover(Batch& b, std::shared_ptr<Cover> c) {
  std::lock_guard<std::mutex> lk(b.cover_mu);
  if (b.covered.load(std::memory_order_relaxed)) return;
  b.cover = std::move(c);
  b.covered.store(true, std::memory_order_release);
}

// One event per stream after this thread's uncovered batches, handed to each of them.
void cover_all(Section& s) {
  std::vector<std::pair<void*, std::shared_ptr<Cover>>> per_stream;
  for (const std::shared_ptr<Batch>& b : s.uncovered) {
    std::shared_ptr<Cover> c;
    for (auto& [stream, cover] : per_stream)
      if (stream == b->stream) c = cover;
    if (!c) {
      c = cover_after(*b);
      per_stream.emplace_back(b->stream, c);
    }
    set_cover(*b, std::move(c));
  }
  s.uncovered.clear();
}

Section::~Section() {
  try {
    launch(*this);  // a thread that ends inside a section: its leaves still get their values
    cover_all(*this);
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
#ifdef NUMPROBE_CUDA_STATS_KERNEL
  if (staged.reserved != 0) {
    while (!cover->ready()) pause();
    if (raw) {
      StatsOptions single;
      single.threads = 1;
      results_[0] = compute_stats(staged.host, counts[0], raw_dtype, single);
      cuda_stats::release_staged(staged);
      cover.reset();
      return;
    }
    fields.assign(static_cast<const double*>(staged.host),
                  static_cast<const double*>(staged.host) + static_cast<size_t>(count) * kFields);
    cuda_stats::release_staged(staged);
    v = fields.data();
  }
#endif
  if (!v) v = static_cast<const double*>(aten_copy.bytes());
  for (int k = 0; k < count; ++k)
    results_[static_cast<size_t>(k)] =
        stats_batch::stats_of_fields(v + static_cast<size_t>(k) * kFields, counts[k]);
  aten_copy = PendingTensorData();
  fields.clear();
  cover.reset();
}

TensorStats Batch::resolve(int k) {
  if (!launched.load(std::memory_order_acquire)) {
    if (t_section.batch.get() == this)
      launch(t_section);  // the gathering thread needs the values now (overflow_check)
    while (!launched.load(std::memory_order_acquire)) pause();
  }
  if (needs_cover && !covered.load(std::memory_order_acquire)) {
    cover_all(t_section);  // covers this batch if this thread launched it
    // Another thread's: its next submit covers it. Entries reach the writer only after one, so
    // waiting long means a path that skipped it; an event recorded from here covers the batch as
    // well (the launch is in the stream before it), so the writer never hangs on one.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (!covered.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > give_up) {
        static std::atomic<bool> told{false};
        if (!told.exchange(true))
          std::fprintf(stderr,
                       "numprobe: internal: a statistics batch reached the writer uncovered; "
                       "covered there\n");
        set_cover(*this, cover_after(*this));
        break;
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
  // Never resolved (its leaves dropped): the copy may still be writing into the ring.
  if (staged.reserved != 0) {
    while (cover && !cover->ready()) pause();
    cuda_stats::release_staged(staged);
  }
#endif
}

}  // namespace

void open_stats_section() {
  ++t_section.depth;
}

void close_stats_section() {
  Section& s = t_section;
  if (--s.depth == 0 && s.batch) launch(s);
}

void seal_stats_batches() {
  Section& s = t_section;
  launch(s);
  if (!s.uncovered.empty()) cover_all(s);
}

std::shared_ptr<DeferredStats> batch_stats(const at::Tensor& t, DType dt) {
  static const bool off = [] {
    const char* v = std::getenv("NUMPROBE_BATCH_DEVICE_STATS");
    return v && v[0] == '0';
  }();
  Section& s = t_section;
  if (off || s.depth == 0 || !stats_batch::batchable(dt) || t.numel() == 0) return nullptr;
  void* stream = nullptr;
  if (t.device().is_cpu()) {
    static const bool defer_cpu = env_flag("NUMPROBE_DEFER_CPU_STATS");
    if (!defer_cpu || t.layout() != c10::kStrided) return nullptr;
  } else {
#ifdef NUMPROBE_CUDA_STATS_KERNEL
    if (!fused_kernel_reads(t, dt)) return nullptr;
    stream = c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#else
    return nullptr;
#endif
  }
  at::Tensor dense = dense_elements(t);
  if (s.batch && (s.device != t.device() || s.stream != stream || s.table.count == kMaxItems))
    launch(s);
  if (!s.batch) {
    s.batch = std::make_shared<Batch>();
    s.device = t.device();
    s.stream = stream;
    s.batch->device = s.device;
    s.batch->stream = stream;
  }
  Batch& b = *s.batch;
  const int k = s.table.count;
  stats_batch::add_item(s.table, dense.data_ptr(), dense.numel(), dt);
  s.keep.push_back(std::move(dense));
  b.count = k + 1;
  b.counts[k] = static_cast<uint64_t>(t.numel());
  b.items[static_cast<size_t>(k)].batch = &b;
  b.items[static_cast<size_t>(k)].index = k;
  return std::shared_ptr<DeferredStats>(s.batch, &b.items[static_cast<size_t>(k)]);
}

}  // namespace numprobe::capture
