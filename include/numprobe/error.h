// Error types shared by every numprobe component.
//
// Contract: functions that read external bytes (files, buffers from a user) throw InputError with
// the file name (or "<buffer>") and, where known, the byte offset of the problem. They never crash,
// never read out of bounds and never allocate more than the input can justify.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace numprobe {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InputError : public Error {
 public:
  // offset < 0 means "no position".
  InputError(std::string file, const std::string& what, int64_t offset = -1);
  const std::string& file() const { return file_; }
  int64_t offset() const { return offset_; }

 private:
  std::string file_;
  int64_t offset_;
};

}  // namespace numprobe
