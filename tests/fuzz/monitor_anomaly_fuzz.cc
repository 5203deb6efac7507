// Fuzzes the anomaly.json reader: any input parses or throws numprobe::Error; what parses renders
// back (msprobe's layout) and reads back to as many distinct keys, and sorts without crashing.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "numprobe/error.h"
#include "numprobe/monitor/anomaly.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace numprobe::monitor;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto records = parse_anomaly_json(text, "fuzz.json");
    std::set<std::string> keys;
    for (const auto& r : records) keys.insert(anomaly_key(r));
    const auto back = parse_anomaly_json(anomaly_json(records), "back");
    if (back.size() != keys.size()) __builtin_trap();
    const auto top = top_anomalies(records, 3, {});
    if (top.size() > 3) __builtin_trap();
  } catch (const numprobe::Error&) {
  }
  return 0;
}
