// The one JSON writer of numprobe. What differs between the JSON files numprobe writes is only
// the dialect (JsonDialect): layout, string escaping and float spelling (json_text.h); the nesting
// and separator bookkeeping is the same, so it lives here once.
//  - JsonDialect::python(n): byte for byte what Python's json.dump(obj, f, indent=n) writes —
//    items on their own lines, "key": value, empty containers as [] / {}, ensure_ascii, repr()
//    floats with NaN / Infinity unquoted. msprobe's dump.json, stack.json and construct.json, and
//    every report numprobe writes for people.
//  - JsonDialect::compact(): {"k":v,...} with UTF-8 kept and non-finite floats as null, for JSON
//    handed to programs (the monitor's canonical config, the report page's data).
//  - JsonDialect::compact_ascii(): compact layout with Python's escaping and repr() digits,
//    non-finite as null: the viewer's API responses, where any byte from a file must give valid
//    JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_text.h"

namespace numprobe::base {

struct JsonDialect {
  enum class Floats : uint8_t { kPythonRepr, kPythonReprNullNonFinite, kPrintfG };
  int indent = -1;  // < 0: compact; >= 0: Python's indent=n layout
  bool ensure_ascii = false;
  Floats floats = Floats::kPrintfG;

  static constexpr JsonDialect compact() { return {-1, false, Floats::kPrintfG}; }
  static constexpr JsonDialect compact_ascii() {
    return {-1, true, Floats::kPythonReprNullNonFinite};
  }
  static constexpr JsonDialect python(int indent) { return {indent, true, Floats::kPythonRepr}; }
};

class JsonWriter {
 public:
  // depth: the nesting depth of the first value written (for writing a fragment in place; only
  // the indented layout depends on it).
  explicit JsonWriter(std::string& out, JsonDialect dialect = JsonDialect::compact(), int depth = 0)
      : out_(out), dialect_(dialect), depth_(depth) {}

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
  // Pre-rendered value text (already laid out for the current depth).
  void raw_value(std::string_view text);
  // For a value the caller writes itself: writes what precedes a value here (separator,
  // indentation) and returns the output, to which the caller appends exactly one complete value
  // laid out for depth() and indent(). Only format's own renderers (dump_render.cc's leaves)
  // write this way; everyone else writes through the typed calls above.
  std::string& raw_begin() {
    before_value();
    return out_;
  }
  int depth() const { return depth_; }
  int indent() const { return dialect_.indent; }
  const JsonDialect& dialect() const { return dialect_; }

 private:
  void before_value();
  void open(char c);
  void close(char c);
  void newline_indent();
  void string_text(std::string_view s);

  std::string& out_;
  JsonDialect dialect_;
  int depth_;
  // Per open container: number of items written so far.
  std::vector<uint32_t> counts_;
  bool after_key_ = false;
};

}  // namespace numprobe::base
