#include "format/json_cursor.h"
#include "numprobe/compare.h"
#include "numprobe/error.h"

namespace numprobe {

CompareInput parse_compare_input(std::string_view text, const std::string& name) {
  format::JsonCursor c(text.data(), text.size(), name);
  if (c.peek() != format::JsonType::kObject) c.fail_schema("compare.json must be a JSON object");
  c.begin_object();
  CompareInput in;
  std::string_view k;
  while (c.next_key(k)) {
    std::string key(k);
    if (key == "npu_path" || key == "bench_path" || key == "stack_path") {
      if (c.peek() != format::JsonType::kString) c.fail_schema(key + " must be a string");
      std::string v(c.read_string());
      if (key == "npu_path") in.target = v;
      if (key == "bench_path") in.golden = v;
      if (key == "stack_path") in.stack = !v.empty();
    } else if (key == "is_print_compare_log") {
      c.skip_value();
    } else {
      c.fail_schema("unknown field \"" + key +
                    "\" (expected npu_path, bench_path, stack_path, is_print_compare_log)");
    }
  }
  c.expect_end();
  if (in.target.empty() || in.golden.empty()) {
    throw InputError(name, "npu_path and bench_path are required");
  }
  return in;
}

}  // namespace numprobe
