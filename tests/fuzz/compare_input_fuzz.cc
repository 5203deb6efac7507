// Fuzzes the compare.json (msprobe compare config) parser.
#include <cstddef>
#include <cstdint>
#include <string>

#include "numprobe/compare.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    numprobe::CompareInput in = numprobe::parse_compare_input(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz-compare.json");
    if (in.target.empty() || in.golden.empty()) __builtin_trap();
  } catch (const numprobe::InputError&) {
  }
  return 0;
}
