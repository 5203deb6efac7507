// .npy files (NumPy format v1.0, v2.0 and v3.0 headers).
//
// bfloat16 and FP8 have no numpy builtin dtype. numprobe writes them either with the explicit descr
// used by the ml_dtypes package ('bfloat16', 'float8_e4m3fn', 'float8_e5m2'; numpy reads these once
// ml_dtypes is imported), or, in raw-bits mode, as '<u2'/'|u1' so plain numpy can load the bits.
// See docs/format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "numprobe/dtype.h"

namespace numprobe {
namespace base {
class MappedFile;
}  // namespace base

struct NpyHeader {
  int major_version = 1;
  DType dtype = DType::kUnknown;
  std::string descr;  // as written in the file, e.g. "<f4"
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // byte offset of the first element
  size_t element_count = 1;
  size_t data_bytes = 0;
  // Bytes per element. Equals dtype_size(dtype), except for unsigned descrs without a DType
  // ('<u2', '<u4', '<u8', e.g. bf16 written in raw-bits mode): those parse with dtype kUnknown and
  // their itemsize so that the caller can reinterpret the bits.
  size_t itemsize = 0;
};

// Parses the header of an in-memory .npy image. `name` appears in error messages.
// Throws InputError on bad magic, unsupported version, malformed dict, unsupported descr
// (big-endian, structured, object), negative/overflowing shapes, or data shorter than the shape
// requires. Extra trailing bytes are allowed.
// Accepted descrs: '<' '|' or '=' with f8 f4 f2 i1 i2 i4 i8 u1 b1 (and u2 u4 u8, see itemsize),
// '>' for one-byte types, and 'bfloat16', 'float8_e4m3fn', 'float8_e5m2'. The dict may list its
// keys in any order and have extra keys; shapes may be tuples or lists, with Python 2 'L' suffixes.
// Headers longer than 1 MiB are rejected.
NpyHeader parse_npy_header(const uint8_t* buf, size_t len, const std::string& name);

// A read-only memory-mapped .npy file. Data is in the file's byte order converted to native only
// if it already is little-endian (big-endian files are rejected by the header parser).
class NpyFile {
 public:
  // Throws InputError (file = path) if the file cannot be opened or mapped, is not a regular file,
  // is empty, or its header is invalid. data() is valid while the NpyFile lives; truncating the
  // file underneath a live mapping is undefined (SIGBUS), as with any mmap.
  static NpyFile open(const std::string& path);
  NpyFile(NpyFile&&) noexcept;
  NpyFile& operator=(NpyFile&&) noexcept;
  ~NpyFile();

  const NpyHeader& header() const { return header_; }
  const void* data() const;
  const std::string& path() const { return path_; }

 private:
  NpyFile() = default;
  std::string path_;
  NpyHeader header_;
  std::unique_ptr<base::MappedFile> map_;
};

// The element type of a file's data: its own dtype, or, for raw-bits files ('<u2', '|u1' parse as
// kUnknown), `declared` (the dtype dump.json gives for the tensor) when the item sizes agree.
// kUnknown if neither applies.
DType resolve_npy_dtype(const NpyHeader& h, DType declared);

enum class NpyNarrowMode { kExplicitDescr, kRawBits };

// Writes a C-order (or Fortran-order if fortran_order) array. Writes to path + ".tmp" then renames,
// so a reader never sees a half-written file (no fsync: not durable across a power loss).
// The header is byte-for-byte what numpy.save (1.24) writes for the same descr and shape: v1.0,
// padded with spaces to a multiple of 64 bytes and ending in '\n'; v2.0 if it needs more than
// 65535 bytes. data holds the elements in the stated order; it may be null when there are none.
// Throws numprobe::Error for kUnknown, negative dims, overflowing sizes and I/O errors.
void write_npy(const std::string& path, const void* data, DType dtype,
               const std::vector<int64_t>& shape, bool fortran_order = false,
               NpyNarrowMode narrow = NpyNarrowMode::kExplicitDescr);

// The descr string numprobe writes for dtype in the given mode.
std::string npy_descr(DType dtype, NpyNarrowMode narrow = NpyNarrowMode::kExplicitDescr);

}  // namespace numprobe
