// Tensors saved by torch.save (the zip format of torch >= 1.6), read without torch: msprobe's
// PyTorch dumps write every tensor of task=tensor as such a .pt file.
//
// The archive is a zip of stored (uncompressed) records: "<prefix>/data.pkl" (a pickle naming
// the tensor's storage, offset, shape and strides) and "<prefix>/data/<key>" (the storage bytes).
// The pickle is read by a small interpreter that only knows the opcodes torch.save emits and only
// builds tensors (torch._utils._rebuild_tensor_v2, _rebuild_parameter, _rebuild_from_type_v2,
// collections.OrderedDict for hooks and state dicts) and, for training checkpoints, inert
// placeholders of a fixed list of plain-data classes; any other callable is an error. Nothing in
// the file is ever executed, unlike torch.load. docs/format.md has the details.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numprobe/dtype.h"

namespace numprobe {

struct PtTensor {
  DType dtype = DType::kUnknown;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  // in elements
  int64_t storage_offset = 0;   // in elements
  size_t storage_begin = 0;     // byte offset of the storage's first byte in the archive
  size_t storage_bytes = 0;
  size_t element_count = 1;
  bool contiguous = true;  // row-major with no gaps: elements are at storage_begin + offset
};

// Parses an in-memory .pt image holding one tensor (or nn.Parameter). `name` appears in errors.
// Throws InputError for: not a zip (e.g. torch's legacy pre-1.6 format), compressed or truncated
// records, a missing data.pkl or storage record, pickle opcodes or callables torch.save does not
// emit for a tensor, a top-level object that is not a tensor, big-endian data, unknown storage
// types, and a view (offset, shape, strides) that reaches outside its storage.
PtTensor parse_pt(const uint8_t* buf, size_t len, const std::string& name);

// A torch.save'd state dict or training checkpoint (a dict of tensors, possibly nested, with other
// Python objects beside them: Megatron's argparse Namespace, RNG states, optimizer state).
struct PtNamedTensor {
  std::string name;  // the dotted key path: "model.layers.0.weight"; list items by index
  PtTensor tensor;
};
struct PtPlaceholder {
  std::string name;   // key path, as for tensors
  std::string klass;  // "argparse.Namespace"
};
struct PtStateDict {
  std::vector<PtNamedTensor> tensors;
  std::vector<PtPlaceholder> placeholders;  // objects kept by class name, never constructed
};

// Parses a .pt image holding any tree of dicts, lists and tuples with tensors as leaves (a bare
// tensor gives one tensor named ""). Objects of a fixed list of plain-data classes (argparse
// Namespace, numpy arrays and dtypes, sets, bytes, torch.device, Megatron enums) become
// placeholders; any other callable is refused with InputError, as in parse_pt.
PtStateDict parse_pt_state_dict(const uint8_t* buf, size_t len, const std::string& name);

// Copies the tensor's elements in row-major order to out (element_count * dtype_size bytes);
// handles non-contiguous views.
void copy_pt_elements(const uint8_t* buf, const PtTensor& t, void* out);

}  // namespace numprobe
