// .npy files: memory-mapped reading and atomic writing. Header parsing is in npy_header.cc.

#include "core/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "numprobe/error.h"

namespace numprobe {
namespace {

constexpr size_t kAlign = 64;  // numpy's ARRAY_ALIGN

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports the error close() gives (delayed write errors surface here).
  int release_close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

std::string errno_text() {
  return std::strerror(errno);
}

// The dict exactly as numpy.save writes it (sorted keys, repr() values, trailing ", }"), followed
// by numpy's spare room for growing the first (C order) or last (Fortran order) axis in place.
std::string header_dict(const std::string& descr, bool fortran_order,
                        const std::vector<int64_t>& shape) {
  constexpr size_t kGrowthAxisMaxDigits = 21;
  std::string s = "{'descr': '" + descr + "', 'fortran_order': ";
  s += fortran_order ? "True" : "False";
  s += ", 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  s += "), }";
  if (!shape.empty()) {
    const size_t digits = std::to_string(fortran_order ? shape.back() : shape.front()).size();
    s.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  return s;
}

// Magic, version, length and the space-padded dict ending in '\n', sized so the data that follows
// starts at a multiple of kAlign. Like numpy, the padding is 1..64 bytes (never 0), and version 2.0
// is used only when the header does not fit a u16 length.
std::string build_header(const std::string& dict) {
  for (int major : {1, 2}) {
    const size_t prefix = major == 1 ? 10 : 12;
    const size_t unpadded = prefix + dict.size() + 1;
    const size_t pad = kAlign - unpadded % kAlign;
    const size_t header_len = dict.size() + 1 + pad;
    if (major == 1 && header_len > 0xFFFF) continue;
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    for (size_t i = 0; i < prefix - 8; ++i)
      out += static_cast<char>((header_len >> (8 * i)) & 0xFF);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  throw Error("write_npy: header too large");
}

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    // Linux transfers at most ~2 GiB per call.
    const size_t chunk = std::min(size, size_t{1} << 30);
    const ssize_t n = ::write(fd, p, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("write_npy: cannot write " + path + ": " + errno_text());
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

std::string npy_descr(DType dtype, NpyNarrowMode narrow) {
  const bool raw = narrow == NpyNarrowMode::kRawBits;
  switch (dtype) {
    case DType::kF64:
      return "<f8";
    case DType::kF32:
      return "<f4";
    case DType::kF16:
      return "<f2";
    case DType::kBF16:
      return raw ? "<u2" : "bfloat16";
    case DType::kF8E4M3FN:
      return raw ? "|u1" : "float8_e4m3fn";
    case DType::kF8E5M2:
      return raw ? "|u1" : "float8_e5m2";
    case DType::kI8:
      return "|i1";
    case DType::kI16:
      return "<i2";
    case DType::kI32:
      return "<i4";
    case DType::kI64:
      return "<i8";
    case DType::kU8:
      return "|u1";
    case DType::kBool:
      return "|b1";
    case DType::kUnknown:
      break;
  }
  throw Error("npy_descr: no .npy descr for dtype " + std::string(dtype_name(dtype)));
}

void write_npy(const std::string& path, const void* data, DType dtype,
               const std::vector<int64_t>& shape, bool fortran_order, NpyNarrowMode narrow) {
  const std::string descr = npy_descr(dtype, narrow);
  size_t bytes = dtype_size(dtype);
  for (int64_t dim : shape) {
    if (dim < 0) throw Error("write_npy: negative dimension in shape for " + path);
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) {
      throw Error("write_npy: shape too large for " + path);
    }
  }
  if (bytes > 0 && data == nullptr) throw Error("write_npy: null data for " + path);
  const std::string header = build_header(header_dict(descr, fortran_order, shape));

  const std::string tmp = path + ".tmp";
  try {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw Error("write_npy: cannot create " + tmp + ": " + errno_text());
    write_all(fd.get(), header.data(), header.size(), tmp);
    write_all(fd.get(), data, bytes, tmp);
    if (fd.release_close() != 0)
      throw Error("write_npy: cannot write " + tmp + ": " + errno_text());
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      throw Error("write_npy: cannot rename " + tmp + " to " + path + ": " + errno_text());
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

NpyFile NpyFile::open(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(path, "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw InputError(path, "cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw InputError(path, "not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) throw InputError(path, "empty file, not a .npy file", 0);

  NpyFile f;
  f.path_ = path;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) throw InputError(path, "cannot mmap: " + errno_text());
  f.map_ = map;
  f.map_size_ = size;
  // f's destructor unmaps if parsing throws.
  f.header_ = parse_npy_header(static_cast<const uint8_t*>(map), size, path);
  return f;
}

NpyFile::NpyFile(NpyFile&& o) noexcept
    : path_(std::move(o.path_)),
      header_(std::move(o.header_)),
      map_(std::exchange(o.map_, nullptr)),
      map_size_(std::exchange(o.map_size_, 0)) {}

NpyFile& NpyFile::operator=(NpyFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, map_size_);
    path_ = std::move(o.path_);
    header_ = std::move(o.header_);
    map_ = std::exchange(o.map_, nullptr);
    map_size_ = std::exchange(o.map_size_, 0);
  }
  return *this;
}

NpyFile::~NpyFile() {
  if (map_) ::munmap(map_, map_size_);
}

const void* NpyFile::data() const {
  return map_ ? static_cast<const uint8_t*>(map_) + header_.data_offset : nullptr;
}

DType resolve_npy_dtype(const NpyHeader& h, DType declared) {
  if (h.dtype != DType::kUnknown) return h.dtype;
  if (declared != DType::kUnknown && dtype_size(declared) == h.itemsize) return declared;
  return DType::kUnknown;
}

}  // namespace numprobe
