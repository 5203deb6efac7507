#include "base/worker_pool.h"

#include <algorithm>
#include <exception>
#include <system_error>

namespace numprobe {

WorkerPool::WorkerPool(size_t workers) {
  for (size_t i = 0; i < workers; ++i) {
    try {
      threads_.emplace_back([this] { loop(); });
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started (or the caller alone) do the work
    }
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::loop() {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_work_.wait(lk, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (next_ < n_) {
      const size_t i = next_++;
      lk.unlock();
      (*fn_)(i);
      lk.lock();
      if (++done_ == n_) cv_done_.notify_all();
    }
  }
}

void WorkerPool::run(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (threads_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> one_job(run_mu_);
  std::unique_lock<std::mutex> lk(mu_);
  fn_ = &fn;
  n_ = n;
  next_ = 1;  // chunk 0 is the caller's
  done_ = 1;
  ++generation_;
  lk.unlock();
  cv_work_.notify_all();
  fn(0);
  lk.lock();
  // The caller also takes chunks the workers have not started yet.
  while (next_ < n_) {
    const size_t i = next_++;
    lk.unlock();
    fn(i);
    lk.lock();
    ++done_;
  }
  cv_done_.wait(lk, [&] { return done_ == n_; });
  fn_ = nullptr;
  n_ = 0;
}

// Calls fn(i) for i in [0, n) on up to `threads` threads (the caller's included). The first
// exception, by index, is rethrown once all calls are done.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  WorkerPool pool(std::min<size_t>(threads, n) - 1);
  pool.run(n, [&](size_t i) {
    try {
      fn(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace numprobe
