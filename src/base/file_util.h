// Files and directories, with error messages that name the file: the one atomic writer (tmp, then
// rename) and the directory helpers every library uses.
#pragma once

#include <string>
#include <string_view>

namespace numprobe::base {

// Writes `bytes` to path.tmp, fsyncs, renames over `path`. Throws Error naming the file.
void write_file_atomic(const std::string& path, std::string_view bytes);
// A regular file (not a directory) at path.
bool file_exists(const std::string& path);
// mkdir -p; throws Error naming the first directory that cannot be made.
void make_dirs(const std::string& path);

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

}  // namespace numprobe::base
