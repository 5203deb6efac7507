// Compact JSON (no whitespace, UTF-8 kept as is), the layout of the JSON numprobe hands to
// programs rather than to people: the monitor's canonical config (read by the Python front) and
// the report page's data (read by its script). The layout is the one these outputs have always had:
//  - strings: '"', '\\', \b \f \n \r \t escaped by name, other bytes below 0x20 as \u00xx
//    (lowercase hex); an ill-formed UTF-8 sequence becomes U+FFFD, one per maximal subpart;
//  - floats: the shortest digits that read back as the same double (the nearest of them), laid
//    out as printf("%g"): decimal for 1e-4 <= |v| < 1e15 (with ".0" when integral), else
//    d.ddde+XX; NaN and +-Infinity as null (JSON has neither). Until 2026-11 nlohmann/json wrote
//    these files, and its Grisu2 sometimes chose longer digits for the same double (0.000649 as
//    0.0006489999999999999): every reader gets the same values, the text can be shorter;
//  - objects and arrays: {"k":v,...} and [v,...].
// Python-exact dump.json text is PyJsonWriter's (py_json_writer.h), not this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::base {

void append_json_string(std::string& out, std::string_view s);
void append_json_float(std::string& out, double v);

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view k);

  void null_value();
  void bool_value(bool b);
  void int_value(int64_t v);
  void float_value(double v);
  void string_value(std::string_view s);
  // Arrays of one type, the common case.
  void int_array(const std::vector<int64_t>& values);
  void string_array(const std::vector<std::string>& values);

 private:
  void before_value();
  void open(char c);
  void close(char c);

  std::string& out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace numprobe::base
