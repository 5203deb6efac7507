#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "numprobe/error.h"

namespace numprobe::base {

MappedFile::MappedFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, std::string("cannot open: ") + strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw InputError(path, std::string("cannot stat: ") + strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(
        path, S_ISDIR(st.st_mode) ? "is a directory, expected a file" : "not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw InputError(path, std::string("cannot map: ") + strerror(e));
    }
    madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const char*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

void MappedFile::release_before(size_t upto) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (data_ == nullptr) return;
  size_t end = (upto / page) * page;
  if (end <= released_) return;
  madvise(const_cast<char*>(data_) + released_, end - released_, MADV_DONTNEED);
  released_ = end;
}

void MappedFile::release_range(size_t begin, size_t end) const {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (data_ == nullptr) return;
  end = std::min(end, size_);
  const size_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first) madvise(const_cast<char*>(data_) + first, last - first, MADV_DONTNEED);
}

}  // namespace numprobe::base
