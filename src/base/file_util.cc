#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "numprobe/error.h"

namespace numprobe::base {

AtomicFileWriter::AtomicFileWriter(std::string path, bool durable)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), durable_(durable) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(tmp_ + ": cannot create: " + strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::write(std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(tmp_ + ": write failed: " + strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (durable_ && ::fsync(fd_) != 0) throw Error(tmp_ + ": flush failed: " + strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_.c_str());
    throw Error(tmp_ + ": close failed: " + strerror(errno));
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    throw Error(path_ + ": cannot rename into place: " + strerror(e));
  }
}

TempPath::TempPath(std::string path, bool durable)
    : path_(std::move(path)), tmp_(path_ + ".tmp" + std::to_string(::getpid())), durable_(durable) {
  ::unlink(tmp_.c_str());  // a leftover of a killed run with this pid
}

TempPath::~TempPath() {
  if (!committed_) ::unlink(tmp_.c_str());
}

void TempPath::commit() {
  if (durable_) {
    int fd = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      int e = errno;
      if (fd >= 0) ::close(fd);
      throw Error(tmp_ + ": flush failed: " + strerror(e));
    }
    ::close(fd);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    throw Error(path_ + ": cannot rename " + tmp_ + " into place: " + strerror(errno));
  }
  committed_ = true;
}

void sync_data(int fd, const std::string& name) {
  if (::fdatasync(fd) != 0) throw Error(name + ": flush failed: " + strerror(errno));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFileWriter w(path);
  w.write(bytes);
  w.commit();
}

void make_dirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      std::string part = path.substr(0, pos);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
        throw Error(part + ": cannot create directory: " + strerror(errno));
    }
  }
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace numprobe::base
