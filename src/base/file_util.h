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

// A temporary path beside `path` for libraries that write a file by name (SQLite, libxlsxwriter):
// they write tmp() (path.tmp<pid>, so two processes writing one output never share it); commit()
// fsyncs it when durable and renames it over `path`. Destroyed without commit(), the temporary is
// removed and `path` is untouched. The one commit rule of every writer: AtomicFileWriter streams,
// TempPath lends a name.
class TempPath {
 public:
  explicit TempPath(std::string path, bool durable = true);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& tmp() const { return tmp_; }
  void commit();

 private:
  std::string path_, tmp_;
  bool durable_ = true, committed_ = false;
};

// fdatasync(fd): a journal's record made durable before the next one (`name` names it in errors).
void sync_data(int fd, const std::string& name);

}  // namespace numprobe::base
