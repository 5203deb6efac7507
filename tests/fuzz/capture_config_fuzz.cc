// Fuzzes the capture config.json parser: any input either parses or throws numprobe::Error (an
// InputError naming the source); every other exception escapes and is reported as a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "capture/capture_config.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    numprobe::capture::CaptureConfig c = numprobe::capture::parse_capture_config(text, "fuzz.json");
    // What the parser promises about a config it accepts.
    for (size_t i = 1; i < c.steps.size(); ++i) {
      if (c.steps[i - 1] >= c.steps[i]) __builtin_trap();
    }
    for (size_t i = 1; i < c.ranks.size(); ++i) {
      if (c.ranks[i - 1] >= c.ranks[i]) __builtin_trap();
    }
    if (!c.steps.empty() && (c.steps.front() < 0 || c.steps.back() > 1000000)) __builtin_trap();
    if (!c.ranks.empty() && (c.ranks.front() < 0 || c.ranks.back() > 1000000)) __builtin_trap();
    if (c.scope.size() != 0 && c.scope.size() != 2) __builtin_trap();
    if (c.dump_path.empty()) __builtin_trap();
    if (c.overflow_nums == 0 || c.overflow_nums < -1) __builtin_trap();
    if (numprobe::capture::max_step(c) != (c.steps.empty() ? -1 : c.steps.back())) __builtin_trap();
  } catch (const numprobe::Error&) {
  }
  return 0;
}
