// Read-only memory map of a whole file, with the option to drop already-consumed pages from the
// process's resident set (they are clean file pages, so the kernel can reread them if touched).
#pragma once

#include <cstddef>
#include <string>

namespace numprobe::base {

class MappedFile {
 public:
  // Throws InputError if the file cannot be opened or mapped. Empty files map to size 0.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Drops resident pages of [0, upto) rounded down to a page boundary.
  void release_before(size_t upto);
  // Drops resident pages that lie wholly inside [begin, end) (pages shared with bytes outside
  // stay), for readers that visit a file out of order.
  void release_range(size_t begin, size_t end) const;

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  size_t released_ = 0;
};

}  // namespace numprobe::base
