// Running work in parallel, the engine's only ways (scripts/check_includes.py keeps std::thread and
// std::async out of the other floors): a fixed set of worker threads that run the chunks of one job
// at a time (for hot paths that split memory-bound work, such as statistics of a large tensor, and
// cannot afford a thread start per call), parallel_for for one-off jobs on a pool of their own, and
// run_in_background for one task beside the caller's own. Each degrades to the caller's thread
// where the system gives no more threads.
// Thread-safe: concurrent run() calls are serialised.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace numprobe {

class WorkerPool {
 public:
  // workers: threads besides the caller (0: none, run() is then a plain loop).
  explicit WorkerPool(size_t workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  size_t workers() const { return threads_.size(); }
  // Calls fn(i) for i in [0, n): i = 0 on the calling thread, the rest on workers, and returns
  // when all are done. fn must not throw.
  void run(size_t n, const std::function<void(size_t)>& fn);

 private:
  void loop();

  std::mutex run_mu_;  // one job at a time
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0, next_ = 0, done_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Calls fn(i) for i in [0, n) on up to `threads` threads (the caller's included), on a pool made
// for the call. fn may throw: the first exception, by index, is rethrown once all calls are done.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn);

// Starts fn on a thread of its own and returns its future: get() waits for the result and rethrows
// what fn threw. Where no thread can be started, fn runs inside get(), on the caller's thread.
template <class F>
auto run_in_background(F fn) -> std::future<decltype(fn())> {
  try {
    return std::async(std::launch::async, fn);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, std::move(fn));
  }
}

}  // namespace numprobe
