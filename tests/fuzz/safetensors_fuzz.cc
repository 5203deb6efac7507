// libFuzzer target for the safetensors reader: header length, JSON header, dtype/shape/offset
// checks. Whatever it accepts must lie inside the buffer and tile the data section.
#include <cstddef>
#include <cstdint>

#include "ckpt/safetensors.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<numprobe::ckpt::TensorEntry> ts;
  try {
    ts = numprobe::ckpt::parse_safetensors(data, size, "<fuzz>");
  } catch (const numprobe::InputError&) {
    return 0;
  }
  size_t total = 0;
  for (const auto& t : ts) {
    const size_t bytes =
        t.count * (t.dtype == numprobe::DType::kUnknown ? 0 : numprobe::dtype_size(t.dtype));
    if (t.begin > size || bytes > size - t.begin) __builtin_trap();
    total += bytes;
    // Touch the first and last byte: the reader promised they are in the buffer.
    if (bytes > 0 && (data[t.begin] ^ data[t.begin + bytes - 1]) == 0x100) __builtin_trap();
  }
  if (total > size) __builtin_trap();
  return 0;
}
