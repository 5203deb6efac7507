// libFuzzer target for the torch.save (.pt) reader: zip directory, pickle interpreter, view
// checks, and the element copy of what it accepts. Any crash or sanitizer report is a bug.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pt.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  numprobe::PtTensor t;
  try {
    t = numprobe::parse_pt(data, size, "<fuzz>");
  } catch (const numprobe::InputError&) {
    return 0;
  }
  const size_t item = numprobe::dtype_size(t.dtype);
  // The parser promises the storage lies inside the buffer and the view inside the storage.
  if (item == 0 || t.storage_begin > size || t.storage_bytes > size - t.storage_begin ||
      t.shape.size() != t.stride.size()) {
    __builtin_trap();
  }
  // Zero strides may describe more elements than the file holds: copy only small views.
  if (t.element_count * item <= (size_t{1} << 20)) {
    std::vector<uint8_t> out(t.element_count * item + 1);
    numprobe::copy_pt_elements(data, t, out.data());
  }
  return 0;
}
