// Emits JSON byte-for-byte as Python's json.dump(obj, f, indent=N) does (msprobe writes dump.json,
// stack.json and construct.json that way): "key": value, items on their own lines, empty
// containers as [] / {}, ensure_ascii escaping, floats as repr() (NaN / Infinity / -Infinity
// unquoted), ints as ints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::base {

// repr(float) as CPython prints it: shortest round-trip digits, exponent form outside
// 1e-4 <= |v| < 1e16, always a '.0' or exponent so it reads back as a float.
void append_py_float(std::string& out, double v);
// The same into out[0..kMaxPyFloatChars); returns the length.
inline constexpr size_t kMaxPyFloatChars = 32;
size_t format_py_float(char* out, double v);
// A JSON string literal with Python's ensure_ascii escaping (input is UTF-8; invalid bytes are
// escaped as \u00XX so output is always valid JSON).
void append_py_string(std::string& out, std::string_view s);

class PyJsonWriter {
 public:
  // depth: the nesting depth of the first value written (for writing a fragment in place).
  explicit PyJsonWriter(std::string& out, int indent = 1, int depth = 0)
      : out_(out), indent_(indent), depth_(depth) {}

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
  // Pre-rendered value text (already formatted for the current depth).
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
  int indent() const { return indent_; }

 private:
  void before_value();
  void open(char c);
  void close(char c);
  void newline_indent();

  std::string& out_;
  int indent_;
  int depth_;
  // Per open container: number of items written so far.
  std::vector<uint32_t> counts_;
  bool after_key_ = false;
};

}  // namespace numprobe::base
