// A checkpoint as ckpt-compare sees it: named tensors whose bytes stay in memory-mapped files
// until they are compared, so that memory holds one tensor pair at a time whatever the size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/pt.h"
#include "numprobe/dtype.h"

namespace numprobe::base {
class MappedFile;
}  // namespace numprobe::base

namespace numprobe::ckpt {

struct TensorEntry {
  std::string name;
  DType dtype = DType::kUnknown;  // kUnknown: a dtype numprobe cannot decode (dtype_text says)
  std::string dtype_text;         // as the file spells it: "float32", "F32", "U32"
  std::vector<int64_t> shape;
  size_t count = 0;      // elements
  size_t file = 0;       // index into Checkpoint's files
  size_t begin = 0;      // byte offset of the first element (row-major, no gaps)
  bool pt_view = false;  // a torch view with strides: bytes come through copy_pt_elements
  PtTensor view;         // when pt_view
  size_t bytes() const { return count * dtype_size(dtype); }
};

// Objects a torch checkpoint holds besides tensors (Megatron's args Namespace, RNG states), kept
// by class name only.
struct PlaceholderEntry {
  std::string name, klass;
};

class Checkpoint {
 public:
  // Opens a safetensors file, a torch.save file (.pt/.bin/.pth), a directory of safetensors shards
  // (with or without model.safetensors.index.json), a Megatron checkpoint tree or a directory of
  // .npy files. Throws InputError naming the file and the reason.
  static Checkpoint open(const std::string& path);

  Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;
  ~Checkpoint();

  const std::string& path() const { return path_; }
  const std::string& kind() const { return kind_; }  // "safetensors", "Megatron", ...
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  const std::vector<PlaceholderEntry>& placeholders() const { return placeholders_; }
  size_t total_bytes() const;

  // The tensor's elements, row-major: a pointer into the mapped file, or (a strided torch view)
  // a copy in scratch.
  const void* data(const TensorEntry& t, std::vector<uint8_t>& scratch) const;
  // Lets the kernel drop the tensor's pages from this process (they are clean file pages).
  void release(const TensorEntry& t) const;

  // For the loaders: maps a file and returns its index.
  size_t add_file(const std::string& path);
  const base::MappedFile& file(size_t index) const { return *files_[index]; }
  const std::string& file_path(size_t index) const { return file_paths_[index]; }
  void add_tensor(TensorEntry t) { tensors_.push_back(std::move(t)); }
  void add_placeholder(std::string name, std::string klass) {
    placeholders_.push_back({std::move(name), std::move(klass)});
  }
  void set_kind(std::string path, std::string kind) {
    path_ = std::move(path);
    kind_ = std::move(kind);
  }
  // Throws InputError(path) when two tensors share a name.
  void check_unique_names() const;

 private:
  std::string path_, kind_;
  std::vector<std::unique_ptr<base::MappedFile>> files_;
  std::vector<std::string> file_paths_;
  std::vector<TensorEntry> tensors_;
  std::vector<PlaceholderEntry> placeholders_;
};

}  // namespace numprobe::ckpt
