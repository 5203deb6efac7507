// Fuzzes the dump.json reader and the writer that renders what was read back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/dump_render.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    numprobe::DumpFile d = numprobe::parse_dump_json(text, "fuzz.json");
    std::string once = numprobe::format::render_dump_json(d);
    // What we write must read back and render identically.
    numprobe::DumpFile again = numprobe::parse_dump_json(once, "fuzz-rendered.json");
    if (numprobe::format::render_dump_json(again) != once) __builtin_trap();
  } catch (const numprobe::InputError&) {
  }
  return 0;
}
