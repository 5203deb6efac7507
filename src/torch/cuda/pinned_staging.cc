#include "torch/cuda/pinned_staging.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "capture/staging_ring.h"

namespace numprobe::capture::cuda_stats {
namespace {

std::mutex g_mu;
StagingRing g_ring;
std::map<int, std::vector<cudaEvent_t>> g_free_events;  // per device

size_t capacity_from_env() {
  const char* v = std::getenv("NUMPROBE_CUDA_STAGING_MB");
  const long mb = v ? std::strtol(v, nullptr, 10) : 64;
  return static_cast<size_t>(mb > 0 ? mb : 0) << 20;
}

char* g_base = nullptr;
bool g_failed = false;

bool ensure_ring() {
  if (g_base || g_failed) return g_base != nullptr;
  const size_t cap = capacity_from_env();
  void* p = nullptr;
  if (cap == 0 || cudaHostAlloc(&p, cap, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    g_failed = true;
    return false;
  }
  g_base = static_cast<char*>(p);
  g_ring = StagingRing(cap);
  return true;
}

cudaEvent_t take_event(int device) {
  cudaEvent_t ev = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto& pool = g_free_events[device];
    if (!pool.empty()) {
      ev = pool.back();
      pool.pop_back();
    }
  }
  if (!ev && cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return ev;
}

// The ring block and the copy into it; false (nothing taken, nothing pending) on failure.
bool copy_into_ring(const void* src, size_t bytes, int device, cudaStream_t s, StagedCopy& out) {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!ensure_ring() || !g_ring.take(bytes, out.offset, out.reserved)) return false;
  }
  out.host = g_base + out.offset;
  out.device = device;
  if (cudaMemcpyAsync(out.host, src, bytes, cudaMemcpyDeviceToHost, s) == cudaSuccess) return true;
  cudaGetLastError();
  std::lock_guard<std::mutex> lk(g_mu);
  g_ring.give_back(out.offset);
  out = StagedCopy();
  return false;
}

}  // namespace

bool stage_copy_uncovered(const void* src, size_t bytes, int device, void* stream,
                          StagedCopy& out) {
  // An error left by earlier work is torch's to report; clearing it below would hide it.
  if (cudaPeekAtLastError() != cudaSuccess) return false;
  return copy_into_ring(src, bytes, device, static_cast<cudaStream_t>(stream), out);
}

bool stage_copy(const void* src, size_t bytes, int device, void* stream, StagedCopy& out) {
  if (cudaPeekAtLastError() != cudaSuccess) return false;
  const auto s = static_cast<cudaStream_t>(stream);
  // The caller made `device` current (the stream belongs to it; so must the event).
  cudaEvent_t ev = take_event(device);
  if (!ev) return false;
  if (!copy_into_ring(src, bytes, device, s, out)) {
    release_pooled_event(device, ev);
    return false;
  }
  if (cudaEventRecord(ev, s) != cudaSuccess) {
    cudaGetLastError();
    // Nothing may still write into the block: wait for what was enqueued before giving it back.
    cudaStreamSynchronize(s);
    std::lock_guard<std::mutex> lk(g_mu);
    g_ring.give_back(out.offset);
    g_free_events[device].push_back(ev);
    out = StagedCopy();
    return false;
  }
  out.event = ev;
  return true;
}

void* record_pooled_event(int device, void* stream) {
  // An error left by earlier work is torch's to report; the caller waits for the stream instead.
  if (cudaPeekAtLastError() != cudaSuccess) return nullptr;
  cudaEvent_t ev = take_event(device);
  if (!ev) return nullptr;
  if (cudaEventRecord(ev, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    cudaGetLastError();
    release_pooled_event(device, ev);
    return nullptr;
  }
  return ev;
}

void wait_for_stream(void* stream) {
  // An error it returns belongs to the work on the stream: left for torch to report.
  (void)cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
}

bool pooled_event_ready(void* event) {
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (e == cudaErrorNotReady) return false;
  if (e != cudaSuccess) cudaGetLastError();  // a failed device: the caller reads what is there
  return true;
}

void release_pooled_event(int device, void* event) {
  if (!event) return;
  std::lock_guard<std::mutex> lk(g_mu);
  g_free_events[device].push_back(static_cast<cudaEvent_t>(event));
}

bool staged_ready(const StagedCopy& c) {
  return !c.event || pooled_event_ready(c.event);
}

void release_staged(StagedCopy& c) {
  if (c.reserved == 0) return;
  std::lock_guard<std::mutex> lk(g_mu);
  g_ring.give_back(c.offset);
  if (c.event) g_free_events[c.device].push_back(static_cast<cudaEvent_t>(c.event));
  c = StagedCopy();
}

}  // namespace numprobe::capture::cuda_stats
