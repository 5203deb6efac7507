// libFuzzer target for the .npy header parser and, on success, the statistics kernels over the
// data the header describes. Any crash, sanitizer report or broken invariant is a bug.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/npy.h"
#include "core/stats.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  numprobe::NpyHeader h;
  try {
    h = numprobe::parse_npy_header(data, size, "<fuzz>");
  } catch (const numprobe::InputError&) {
    return 0;
  }
  // The parser promises that the described data lies inside the buffer.
  if (h.data_offset > size || h.data_bytes > size - h.data_offset ||
      h.data_bytes != h.element_count * h.itemsize) {
    __builtin_trap();
  }
  if (h.dtype != numprobe::DType::kUnknown) {
    numprobe::StatsOptions opt;
    opt.threads = 1;
    const size_t n = std::min<size_t>(h.element_count, size_t{1} << 16);
    const numprobe::TensorStats s = numprobe::compute_stats(data + h.data_offset, n, h.dtype, opt);
    if (s.count != n || s.nan_count > n || s.zero_count > n) __builtin_trap();
  }
  return 0;
}
