// A JSON document as a small tree, for the inputs read whole (KB to MB: configs, anomaly files,
// config_check packs' members); streamed inputs (dump.json) use JsonCursor directly, and the tree
// is built over it (one tokenizer). Objects keep their key order, numbers keep their token beside
// their value, and every value knows its byte offset, so a reader's messages can point at it.
//
// Readers walk the tree with their own schema and message wording; what they share is here: the
// kinds and their names, integers as Python reads them (any size, checked against int64), and the
// two dialects (Python's json module, or strict RFC 8259 as a config file must be).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace numprobe::base {

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;        // a number's value (NaN and +-Infinity only in the Python dialect)
  bool integral = false;    // a number token with no fraction or exponent: Python's int
  bool fits_int64 = false;  // integral and within int64; then `integer` holds it
  int64_t integer = 0;
  std::string text;  // a string's value, a number's token
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;  // each key once (see JsonReadOptions)
  size_t offset = 0;                                 // of the value's first byte in its text

  const Json* find(const std::string& key) const;
  bool is_null() const { return kind == kNull; }
  bool is_bool() const { return kind == kBool; }
  bool is_number() const { return kind == kNumber; }
  bool is_int() const { return kind == kNumber && integral; }  // of any size: check fits_int64
  bool is_string() const { return kind == kString; }
  bool is_array() const { return kind == kArray; }
  bool is_object() const { return kind == kObject; }
  // "null", "boolean", "number", "string", "array", "object".
  const char* type_name() const;
  // Python's str() of the value json.loads would give: 0.1, True, None, 'text' inside containers.
  std::string python_str() const;
  std::string python_repr() const;
};

struct JsonReadOptions {
  // false: what Python's json.loads accepts (NaN, Infinity and -Infinity; a number beyond a
  // double reads as +-inf; strings as their escapes decode, lone surrogates included).
  // true: RFC 8259: those are errors ("number overflow" for 1e999), and strings are valid UTF-8.
  bool strict = false;
  // A key twice in one object: false keeps Python's dict (the first position, the last value);
  // true makes it an error naming the key's path (`field "a.b[2].c" appears twice`).
  bool unique_keys = false;
  int max_depth = 512;
  // How a syntax error's message starts (JsonCursor::set_syntax_label).
  std::string syntax_label = "invalid JSON";
};

// Parses all of text (source names it in errors); throws InputError with the byte offset.
Json parse_json(std::string_view text, const std::string& source,
                const JsonReadOptions& options = {});

}  // namespace numprobe::base
