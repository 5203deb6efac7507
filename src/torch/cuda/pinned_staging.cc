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

}  // namespace

bool stage_copy(const void* src, size_t bytes, int device, void* stream, StagedCopy& out) {
  // An error left by earlier work is torch's to report; clearing it below would hide it.
  if (cudaPeekAtLastError() != cudaSuccess) return false;
  cudaEvent_t ev = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!ensure_ring() || !g_ring.take(bytes, out.offset, out.reserved)) return false;
    auto& pool = g_free_events[device];
    if (!pool.empty()) {
      ev = pool.back();
      pool.pop_back();
    }
  }
  out.host = g_base + out.offset;
  out.device = device;
  // The caller made `device` current (the stream belongs to it; so must the event).
  bool ok = ev || cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess;
  const auto s = static_cast<cudaStream_t>(stream);
  ok = ok && cudaMemcpyAsync(out.host, src, bytes, cudaMemcpyDeviceToHost, s) == cudaSuccess;
  ok = ok && cudaEventRecord(ev, s) == cudaSuccess;
  if (!ok) {
    cudaGetLastError();
    // Nothing may still write into the block: wait for what was enqueued before giving it back.
    cudaStreamSynchronize(s);
    std::lock_guard<std::mutex> lk(g_mu);
    g_ring.give_back(out.offset);
    if (ev) g_free_events[device].push_back(ev);
    out = StagedCopy();
    return false;
  }
  out.event = ev;
  return true;
}

bool staged_ready(const StagedCopy& c) {
  if (!c.event) return true;
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(c.event));
  if (e == cudaErrorNotReady) return false;
  if (e != cudaSuccess) cudaGetLastError();  // a failed device: the caller reads what is there
  return true;
}

void release_staged(StagedCopy& c) {
  if (c.reserved == 0) return;
  std::lock_guard<std::mutex> lk(g_mu);
  g_ring.give_back(c.offset);
  if (c.event) g_free_events[c.device].push_back(static_cast<cudaEvent_t>(c.event));
  c = StagedCopy();
}

}  // namespace numprobe::capture::cuda_stats
