// A pull parser over an in-memory JSON text, accepting what Python's json module writes:
// the non-strict number tokens NaN, Infinity and -Infinity included.
//
// The caller drives it (peek / begin_object / next_key / ...), so readers build their typed model
// directly, with no intermediate DOM. Strings are returned as views into a scratch buffer that
// stays valid only until the next call. Every error throws InputError naming the file and byte
// offset. Nesting deeper than max_depth is an error (msprobe itself caps dumps at depth 400).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace numprobe::base {

enum class JsonType { kNull, kBool, kNumber, kString, kArray, kObject };

struct JsonNumber {
  double value = 0;
  int64_t int_value = 0;
  bool is_int = false;  // the token had no fraction/exponent and fits int64
};

class JsonCursor {
 public:
  JsonCursor(const char* data, size_t size, std::string name, int max_depth = 512);

  // Type of the next value (skips whitespace). Throws on end of input or a bad token.
  JsonType peek();
  void read_null();
  bool read_bool();
  JsonNumber read_number();
  std::string_view read_string();

  // Containers: begin, then loop `while (next_item())` / `while (next_key(k))` which consume
  // separators and the closing bracket.
  void begin_array();
  bool next_item();
  void begin_object();
  bool next_key(std::string_view& key);

  // Skips one complete value of any type.
  void skip_value();
  // Copies the raw text of the next value (used to keep unknown fields verbatim).
  std::string_view raw_value();
  // Must be at end of input (only whitespace left).
  void expect_end();

  size_t offset() const { return pos_; }
  const std::string& name() const { return name_; }
  // What a syntax error's message starts with: "invalid JSON" unless a reader names it its way
  // ("malformed JSON", "not valid JSON": the wording its users and tests know).
  void set_syntax_label(std::string label) { syntax_label_ = std::move(label); }
  // Syntax errors ("invalid JSON: ...").
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_at(size_t pos, const std::string& what) const;
  // Content errors found by a reader of a particular schema.
  [[noreturn]] void fail_schema(const std::string& what) const { fail_schema_at(pos_, what); }
  [[noreturn]] void fail_schema_at(size_t pos, const std::string& what) const;

 private:
  void skip_ws();
  void push();
  std::string_view parse_string_at();
  uint32_t parse_hex4();

  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string name_;
  std::string syntax_label_ = "invalid JSON";
  int depth_ = 0;
  int max_depth_;
  // Per container depth: whether the next item is the first (no comma expected).
  std::string first_;
  std::string scratch_;
};

}  // namespace numprobe::base
