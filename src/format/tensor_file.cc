#include "format/tensor_file.h"

#include <cstring>

#include "base/mapped_file.h"
#include "core/npy.h"
#include "core/pt.h"
#include "numprobe/error.h"

namespace numprobe {

// One mapping of the file, whatever its kind; a copy only for a non-contiguous .pt view.
struct TensorFile::Storage {
  explicit Storage(const std::string& path) : mapped(path) {}
  base::MappedFile mapped;
  std::vector<uint8_t> copy;
};

TensorFile::TensorFile() = default;
TensorFile::TensorFile(TensorFile&&) noexcept = default;
TensorFile& TensorFile::operator=(TensorFile&&) noexcept = default;
TensorFile::~TensorFile() = default;

TensorFile TensorFile::open(const std::string& path, DType declared) {
  TensorFile f;
  f.storage_ = std::make_unique<Storage>(path);
  const auto* bytes = reinterpret_cast<const uint8_t*>(f.storage_->mapped.data());
  const size_t size = f.storage_->mapped.size();
  if (size >= 6 && memcmp(bytes, "\x93NUMPY", 6) == 0) {
    const NpyHeader h = parse_npy_header(bytes, size, path);
    f.dtype_ = resolve_npy_dtype(h, declared);
    if (f.dtype_ == DType::kUnknown)
      throw InputError(path, "descr '" + h.descr + "' is not a known element type");
    f.shape_ = h.shape;
    f.count_ = h.element_count;
    f.data_ = bytes + h.data_offset;
    return f;
  }
  if (size >= 4 && memcmp(bytes, "PK\x03\x04", 4) == 0) {
    const PtTensor t = parse_pt(bytes, size, path);
    f.dtype_ = t.dtype;
    f.shape_ = t.shape;
    f.count_ = t.element_count;
    if (t.contiguous) {
      f.data_ =
          bytes + t.storage_begin + static_cast<size_t>(t.storage_offset) * dtype_size(t.dtype);
    } else {
      f.storage_->copy.resize(f.bytes());
      copy_pt_elements(bytes, t, f.storage_->copy.data());
      f.data_ = f.storage_->copy.data();
    }
    return f;
  }
  throw InputError(path, "neither a .npy file nor a torch.save archive (unknown magic bytes)", 0);
}

}  // namespace numprobe
