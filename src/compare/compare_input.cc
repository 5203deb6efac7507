#include <optional>

#include "base/json_cursor.h"
#include "numprobe/compare.h"
#include "numprobe/error.h"

namespace numprobe {

CompareInput parse_compare_input(std::string_view text, const std::string& name,
                                 bool golden_optional) {
  base::JsonCursor c(text.data(), text.size(), name);
  if (c.peek() != base::JsonType::kObject) c.fail_schema("compare.json must be a JSON object");
  c.begin_object();
  CompareInput in;
  std::string_view k;
  while (c.next_key(k)) {
    std::string key(k);
    if (key == "npu_path" || key == "bench_path" || key == "stack_path") {
      if (c.peek() != base::JsonType::kString) c.fail_schema(key + " must be a string");
      std::string v(c.read_string());
      if (key == "npu_path") in.target = v;
      if (key == "bench_path") in.golden = v;
      if (key == "stack_path") in.stack = !v.empty();
    } else if (key == "is_print_compare_log") {
      c.skip_value();
    } else if (key == "parallel_merge") {
      // msprobe graph's TP/PP/VPP shard merge: read so that the caller can say it is unsupported.
      if (c.peek() == base::JsonType::kNull) {
        c.read_null();
      } else {
        if (c.peek() != base::JsonType::kObject) c.fail_schema("parallel_merge must be an object");
        c.skip_value();
        in.parallel_merge = true;
      }
    } else if (key == "data_mapping" || key == "cell_mapping" || key == "api_mapping" ||
               key == "layer_mapping") {
      // A file path, or true for the option without a file; false / null: off.
      std::optional<std::string> v;
      switch (c.peek()) {
        case base::JsonType::kString:
          v = std::string(c.read_string());
          if (v->empty()) c.fail_schema(key + " must not be an empty path");
          break;
        case base::JsonType::kBool:
          if (c.read_bool()) v = std::string();
          break;
        case base::JsonType::kNull:
          c.read_null();
          break;
        default:
          c.fail_schema(key + " must be a file path, true, false or null");
      }
      if (key == "data_mapping") {
        if (v && v->empty()) c.fail_schema("data_mapping needs a file path");
        in.mappings.data_mapping = v.value_or("");
      } else if (key == "cell_mapping") {
        in.mappings.cell_mapping = v;
      } else if (key == "api_mapping") {
        in.mappings.api_mapping = v;
      } else {
        in.mappings.layer_mapping = v;
      }
    } else {
      c.fail_schema("unknown field \"" + key +
                    "\" (expected npu_path, bench_path, stack_path, is_print_compare_log, "
                    "data_mapping, cell_mapping, api_mapping, layer_mapping, parallel_merge)");
    }
  }
  c.expect_end();
  if (in.target.empty()) throw InputError(name, "npu_path is required");
  if (in.golden.empty() && !golden_optional) throw InputError(name, "bench_path is required");
  return in;
}

}  // namespace numprobe
