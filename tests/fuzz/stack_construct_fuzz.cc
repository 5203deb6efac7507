// Fuzzes the stack.json and construct.json readers (both stack layouts) and their writers.
#include <cstddef>
#include <cstdint>
#include <string>

#include "numprobe/error.h"
#include "numprobe/stack_construct.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    numprobe::StackTable s = numprobe::parse_stack_json(text, "fuzz-stack.json");
    std::string once = numprobe::render_stack_json(s);
    numprobe::StackTable s2 = numprobe::parse_stack_json(once, "rendered-stack.json");
    if (numprobe::render_stack_json(s2) != once) __builtin_trap();
  } catch (const numprobe::InputError&) {
  }
  try {
    numprobe::ConstructTable c = numprobe::parse_construct_json(text, "fuzz-construct.json");
    std::string once = numprobe::render_construct_json(c);
    numprobe::ConstructTable c2 = numprobe::parse_construct_json(once, "rendered-construct.json");
    if (numprobe::render_construct_json(c2) != once) __builtin_trap();
  } catch (const numprobe::InputError&) {
  }
  return 0;
}
