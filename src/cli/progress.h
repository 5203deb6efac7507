// A progress bar on stderr for work that lasts more than about a second; silent when stderr is not
// a terminal (logs and pipes stay clean) or the work finishes quickly.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace numprobe::cli {

class Progress {
 public:
  Progress(std::string label, uint64_t total);
  ~Progress();
  void update(uint64_t done);
  void finish();

 private:
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace numprobe::cli
