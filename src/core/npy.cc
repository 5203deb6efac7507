// .npy files: memory-mapped reading and atomic writing (on base's MappedFile and
// AtomicFileWriter). Header parsing is in npy_header.cc.

#include "core/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

constexpr size_t kAlign = 64;  // numpy's ARRAY_ALIGN

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

  // Not durable (no fsync): a reader never sees a half-written file, which is what tensor dumps
  // need.
  base::AtomicFileWriter out(path, /*durable=*/false);
  out.write(header);
  out.write(std::string_view(static_cast<const char*>(data), bytes));
  out.commit();
}

NpyFile NpyFile::open(const std::string& path) {
  NpyFile f;
  f.path_ = path;
  f.map_ = std::make_unique<base::MappedFile>(path);
  if (f.map_->size() == 0) throw InputError(path, "empty file, not a .npy file", 0);
  f.header_ =
      parse_npy_header(reinterpret_cast<const uint8_t*>(f.map_->data()), f.map_->size(), path);
  return f;
}

NpyFile::NpyFile(NpyFile&&) noexcept = default;
NpyFile& NpyFile::operator=(NpyFile&&) noexcept = default;
NpyFile::~NpyFile() = default;

const void* NpyFile::data() const {
  return map_ ? reinterpret_cast<const uint8_t*>(map_->data()) + header_.data_offset : nullptr;
}

DType resolve_npy_dtype(const NpyHeader& h, DType declared) {
  if (h.dtype != DType::kUnknown) return h.dtype;
  if (declared != DType::kUnknown && dtype_size(declared) == h.itemsize) return declared;
  return DType::kUnknown;
}

}  // namespace numprobe
