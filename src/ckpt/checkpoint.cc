#include "ckpt/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "base/mapped_file.h"
#include "ckpt/loaders.h"
#include "ckpt/safetensors.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {

Checkpoint::Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

size_t Checkpoint::add_file(const std::string& path) {
  files_.push_back(std::make_unique<base::MappedFile>(path));
  file_paths_.push_back(path);
  return files_.size() - 1;
}

size_t Checkpoint::total_bytes() const {
  size_t n = 0;
  for (const TensorEntry& t : tensors_) n += t.bytes();
  return n;
}

const void* Checkpoint::data(const TensorEntry& t, std::vector<uint8_t>& scratch) const {
  const auto* base = reinterpret_cast<const uint8_t*>(files_[t.file]->data());
  if (!t.pt_view) return base + t.begin;
  scratch.resize(t.bytes());
  copy_pt_elements(base, t.view, scratch.data());
  return scratch.data();
}

void Checkpoint::release(const TensorEntry& t) const {
  if (t.pt_view)
    files_[t.file]->release_range(t.view.storage_begin,
                                  t.view.storage_begin + t.view.storage_bytes);
  else
    files_[t.file]->release_range(t.begin, t.begin + t.bytes());
}

void Checkpoint::check_unique_names() const {
  std::set<std::string_view> seen;
  for (const TensorEntry& t : tensors_)
    if (!seen.insert(t.name).second)
      throw InputError(file_paths_[t.file],
                       "tensor '" + t.name + "' appears in more than one file");
}

namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& path) {
  Checkpoint c;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw InputError(path, "no such file or directory");
  if (is_dir(path)) {
    load_directory(c, path);
  } else if (ends_with(path, ".safetensors")) {
    c.set_kind(path, "safetensors");
    load_safetensors(c, path);
  } else if (ends_with(path, ".npy")) {
    c.set_kind(path, "npy");
    load_npy_file(c, path, "");
  } else {
    load_torch_file(c, path);
  }
  c.check_unique_names();
  return c;
}

}  // namespace numprobe::ckpt
