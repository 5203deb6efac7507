// Small filesystem helpers with error messages that name the file.
#pragma once

#include <string>
#include <string_view>

namespace numprobe::format {

// Writes `bytes` to path.tmp, fsyncs, renames over `path`. Throws Error naming the file.
void write_file_atomic(const std::string& path, std::string_view bytes);
bool file_exists(const std::string& path);

// Streams a file into place: bytes go to path.tmp; commit() fsyncs and renames. Destroyed without
// commit(), the temporary is removed and `path` is untouched.
class AtomicFileWriter {
 public:
  // durable: fsync before the rename, so the file survives a power loss once committed (a process
  // crash never loses a committed file either way).
  explicit AtomicFileWriter(std::string path, bool durable = true);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(std::string_view bytes);
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool durable_ = true;
};

}  // namespace numprobe::format
