// Fuzzes the CSV reader behind `acc-check -csv_path` (a user's result file): any input parses
// or throws numprobe::Error; parsed rows written back and parsed again give the same rows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "numprobe/csv.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rows = numprobe::csv_parse(text, "fuzz.csv");
    std::string back;
    for (const auto& row : rows) {
      std::string line;
      for (const auto& cell : row) numprobe::csv_append_cell(line, cell);
      if (line.empty()) line = "\"\"";
      back += line + "\n";
    }
    const auto again = numprobe::csv_parse(back, "again.csv");
    if (again.size() != rows.size()) __builtin_trap();
    for (size_t i = 0; i < rows.size(); ++i) {
      // a row of one empty cell is written as "" and reads back as one empty cell
      if (rows[i] != again[i]) __builtin_trap();
    }
  } catch (const numprobe::Error&) {
  }
  return 0;
}
