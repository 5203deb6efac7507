// grad_probe's writes off the training thread: one background thread makes directories and writes
// files in the order they were queued (a step's direction files before its summary, so a summary
// on disk means its step is complete). The training thread only computes (the gradient is read
// there, before the optimizer changes anything) and queues bytes.
//
// Invariants: at most `max_bytes` of queued data (a producer waits above it); the first write
// error is kept and rethrown by the next push() or by flush(), never dropped; flush() and the
// destructor return once everything queued is on disk (the destructor swallows the error).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace numprobe::grad_probe {

class FileQueue {
 public:
  explicit FileQueue(size_t max_bytes = size_t{256} << 20);
  ~FileQueue();
  FileQueue(const FileQueue&) = delete;
  FileQueue& operator=(const FileQueue&) = delete;

  void make_dirs(std::string dir);
  // A numpy bool array of `shape` (bytes: one 0/1 byte per element, C order).
  void write_bool_npy(std::string path, std::vector<uint8_t> bytes, std::vector<int64_t> shape);
  // A text file (tmp, then rename; no fsync).
  void write_text(std::string path, std::string text);
  void flush();

 private:
  struct Job {
    enum Kind { kDir, kNpy, kText } kind;
    std::string path;
    std::vector<uint8_t> bytes;
    std::vector<int64_t> shape;
    std::string text;
    size_t size() const { return bytes.size() + text.size(); }
  };
  void push(Job job);
  void loop();
  static void run(const Job& job);

  const size_t max_bytes_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_room_;
  std::deque<Job> jobs_;
  size_t queued_bytes_ = 0;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace numprobe::grad_probe
