// Fuzzes the CSV reader behind `acc-check -csv_path` (a user's result file): any input parses
// or throws numprobe::Error, and never yields more cells than the input has bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/csv.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rows = numprobe::csv_parse(text, "fuzz.csv");
    // Every cell read is bounded by the input.
    size_t cells = 0;
    for (const auto& row : rows) cells += row.size();
    if (cells > text.size() + 1) __builtin_trap();
  } catch (const numprobe::Error&) {
  }
  return 0;
}
