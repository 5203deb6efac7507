// torch.save files and .npy files as checkpoint entries.
#include <cstring>

#include "base/mapped_file.h"
#include "ckpt/loaders.h"
#include "ckpt/safetensors.h"
#include "core/npy.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {

void add_pt_tensors(Checkpoint& c, size_t file, const PtStateDict& sd, const std::string& subtree,
                    const std::string& prefix, const std::string& suffix) {
  for (const PtNamedTensor& nt : sd.tensors) {
    std::string rest = nt.name;
    if (!subtree.empty()) {
      if (rest.compare(0, subtree.size() + 1, subtree + ".") != 0) continue;
      rest = rest.substr(subtree.size() + 1);
    }
    TensorEntry t;
    t.name = prefix + rest + suffix;
    t.dtype = nt.tensor.dtype;
    t.dtype_text = std::string(dtype_name(t.dtype));
    t.shape = nt.tensor.shape;
    t.count = nt.tensor.element_count;
    t.file = file;
    t.pt_view = !nt.tensor.contiguous;
    t.view = nt.tensor;
    t.begin = nt.tensor.storage_begin +
              static_cast<size_t>(nt.tensor.storage_offset) * dtype_size(t.dtype);
    c.add_tensor(std::move(t));
  }
}

void load_torch_file(Checkpoint& c, const std::string& path) {
  const size_t f = c.add_file(path);
  const base::MappedFile& m = c.file(f);
  const auto* buf = reinterpret_cast<const uint8_t*>(m.data());
  // safetensors under another name (.bin files are either): 8-byte length, then '{'.
  if (m.size() >= 9 && memcmp(buf, "PK", 2) != 0 && buf[8] == '{') {
    c.set_kind(path, "safetensors");
    for (TensorEntry& t : parse_safetensors(buf, m.size(), path, f)) c.add_tensor(std::move(t));
    return;
  }
  if (c.kind().empty()) c.set_kind(path, "torch.save");
  const PtStateDict sd = parse_pt_state_dict(buf, m.size(), path);
  add_pt_tensors(c, f, sd, "", "", "");
  for (const PtPlaceholder& p : sd.placeholders) c.add_placeholder(p.name, p.klass);
}

void load_npy_file(Checkpoint& c, const std::string& path, const std::string& name) {
  const size_t f = c.add_file(path);
  const base::MappedFile& m = c.file(f);
  const NpyHeader h = parse_npy_header(reinterpret_cast<const uint8_t*>(m.data()), m.size(), path);
  if (h.fortran_order) throw InputError(path, "Fortran-order arrays are not supported");
  TensorEntry t;
  t.name = name;
  t.dtype = h.dtype;  // kUnknown for raw-bits descrs: listed, not compared
  t.dtype_text = h.descr;
  t.shape = h.shape;
  t.count = h.element_count;
  t.file = f;
  t.begin = h.data_offset;
  c.add_tensor(std::move(t));
}

}  // namespace numprobe::ckpt
