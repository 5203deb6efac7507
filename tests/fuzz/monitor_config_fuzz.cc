// Fuzzes the monitor config.json parser: any input parses or throws numprobe::Error naming the
// file; an accepted config keeps the invariants config.h promises.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "numprobe/error.h"
#include "numprobe/monitor/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto c = numprobe::monitor::parse_monitor_config(text, "fuzz.json");
    if (c.ops.empty() || c.step_interval < 1 || c.ndigits < 0 || c.ndigits > 20) __builtin_trap();
    if (c.step_count_per_record < 1) __builtin_trap();
    // The canonical JSON reads back.
    numprobe::monitor::parse_monitor_config(numprobe::monitor::monitor_config_json(c), "canon");
  } catch (const numprobe::Error&) {
  }
  return 0;
}
