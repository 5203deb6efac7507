// Fuzzes the monitor CSV reader: any input parses or throws numprobe::Error; every row it accepts
// has one value per op.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "monitor/monitor_csv.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto csv = numprobe::monitor::parse_monitor_csv(text, "fuzz.csv");
    for (const auto& row : csv.rows)
      if (row.values.size() != csv.ops.size()) __builtin_trap();
  } catch (const numprobe::Error&) {
  }
  return 0;
}
