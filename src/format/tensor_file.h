// A tensor data file of a dump (dump_tensor_data/<data_name>): NumPy .npy (numprobe, msprobe's
// MindSpore dumps) or torch.save .pt (msprobe's PyTorch dumps), told apart by their magic bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "numprobe/dtype.h"

namespace numprobe {

class TensorFile {
 public:
  // `declared` is dump.json's dtype for the tensor: it types raw-bits .npy files ('<u2' holding
  // bf16). Throws InputError naming the path for unreadable files, unknown formats, invalid
  // contents, or a dtype neither the file nor `declared` gives.
  static TensorFile open(const std::string& path, DType declared = DType::kUnknown);
  TensorFile(TensorFile&&) noexcept;
  TensorFile& operator=(TensorFile&&) noexcept;
  ~TensorFile();

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t count() const { return count_; }
  // count() elements in row-major order: the mapped file itself, or a copy for a non-contiguous
  // .pt view. Valid while the TensorFile lives.
  const void* data() const { return data_; }
  size_t bytes() const { return count_ * dtype_size(dtype_); }

 private:
  struct Storage;
  TensorFile();
  std::unique_ptr<Storage> storage_;
  DType dtype_ = DType::kUnknown;
  std::vector<int64_t> shape_;
  size_t count_ = 0;
  const void* data_ = nullptr;
};

}  // namespace numprobe
