#include "grad_probe/file_queue.h"

#include <utility>

#include "base/file_util.h"
#include "core/npy.h"

namespace numprobe::grad_probe {

FileQueue::FileQueue(size_t max_bytes) : max_bytes_(max_bytes) {
  thread_ = std::thread([this] { loop(); });
}

FileQueue::~FileQueue() {
  try {
    flush();
  } catch (...) {
    // Destructors must not throw; close() callers use flush() to see the error.
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  thread_.join();
}

void FileQueue::make_dirs(std::string dir) {
  Job j{Job::kDir, std::move(dir), {}, {}, {}};
  push(std::move(j));
}

void FileQueue::write_bool_npy(std::string path, std::vector<uint8_t> bytes,
                               std::vector<int64_t> shape) {
  Job j{Job::kNpy, std::move(path), std::move(bytes), std::move(shape), {}};
  push(std::move(j));
}

void FileQueue::write_text(std::string path, std::string text) {
  Job j{Job::kText, std::move(path), {}, {}, std::move(text)};
  push(std::move(j));
}

void FileQueue::push(Job job) {
  std::unique_lock<std::mutex> lk(mu_);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  // One job larger than the bound still goes in (alone), or it would wait forever.
  cv_room_.wait(lk, [&] { return jobs_.empty() || queued_bytes_ + job.size() <= max_bytes_; });
  queued_bytes_ += job.size();
  jobs_.push_back(std::move(job));
  cv_work_.notify_one();
}

void FileQueue::flush() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_room_.wait(lk, [&] { return jobs_.empty() && !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void FileQueue::run(const Job& j) {
  switch (j.kind) {
    case Job::kDir:
      base::make_dirs(j.path);
      break;
    case Job::kNpy:
      write_npy(j.path, j.bytes.data(), DType::kBool, j.shape);
      break;
    case Job::kText: {
      base::AtomicFileWriter out(j.path, /*durable=*/false);
      out.write(j.text);
      out.commit();
      break;
    }
  }
}

void FileQueue::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_work_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_, and nothing left
    Job j = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lk.unlock();
    std::exception_ptr err;
    try {
      run(j);
    } catch (...) {
      err = std::current_exception();
    }
    lk.lock();
    busy_ = false;
    queued_bytes_ -= j.size();
    if (err && !error_) error_ = err;
    cv_room_.notify_all();
  }
}

}  // namespace numprobe::grad_probe
