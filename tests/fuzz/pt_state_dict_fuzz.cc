// libFuzzer target for torch.save state dicts and Megatron rank files: the pickle interpreter with
// dict items, in-place container growth, placeholders for Namespace/numpy/enums, refused
// callables, and the views of every tensor it finds. Any crash, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pt.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  numprobe::PtStateDict sd;
  try {
    sd = numprobe::parse_pt_state_dict(data, size, "<fuzz>");
  } catch (const numprobe::InputError&) {
    return 0;
  }
  for (const auto& nt : sd.tensors) {
    const auto& t = nt.tensor;
    const size_t item = numprobe::dtype_size(t.dtype);
    if (item == 0 || t.storage_begin > size || t.storage_bytes > size - t.storage_begin ||
        t.shape.size() != t.stride.size())
      __builtin_trap();
    if (t.element_count * item <= (size_t{1} << 16)) {
      std::vector<uint8_t> out(t.element_count * item + 1);
      numprobe::copy_pt_elements(data, t, out.data());
    }
  }
  return 0;
}
