// Fuzzes grad_probe's grad_summary_{step}.csv reader: any input parses or throws numprobe::Error;
// what it accepts has the header's shape (param_name first), and unique, non-empty names that can
// name a direction file.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "grad_probe/grad_run.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto s = numprobe::grad_probe::parse_grad_summary(text, "fuzz.csv");
    if (s.columns.size() < 5 || s.columns[0] != "param_name") __builtin_trap();
    std::set<std::string> seen;
    for (const auto& p : s.params)
      if (p.empty() || p.find('/') != std::string::npos || !seen.insert(p).second) __builtin_trap();
  } catch (const numprobe::Error&) {
  }
  return 0;
}
