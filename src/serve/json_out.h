// The viewer's API responses: base::JsonWriter in its compact_ascii dialect (Python's escaping, so
// any byte sequence from a file gives valid JSON; a non-finite number as null, JSON has no NaN),
// with chaining and the copying of JSON values read from files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_writer.h"

namespace numprobe::base {
class JsonCursor;
}

namespace numprobe::serve {

class JsonOut {
 public:
  JsonOut() = default;
  JsonOut(const JsonOut&) = delete;  // w_ writes into out_
  JsonOut& operator=(const JsonOut&) = delete;

  JsonOut& begin_object() { return open('{'); }
  JsonOut& end_object() { return close('}'); }
  JsonOut& begin_array() { return open('['); }
  JsonOut& end_array() { return close(']'); }
  JsonOut& key(std::string_view k);
  JsonOut& str(std::string_view s);
  JsonOut& num(int64_t v);
  JsonOut& num(double v);
  JsonOut& num(const std::optional<double>& v);
  JsonOut& boolean(bool b);
  JsonOut& null();
  JsonOut& strings(const std::vector<std::string>& list);
  // Copies one JSON value (Python's NaN/Infinity tokens accepted, written as null). Throws
  // InputError on malformed text, leaving the output unusable.
  JsonOut& copy(base::JsonCursor& c);
  // copy() of a whole text; `fallback` (a JSON literal) when it is blank or malformed.
  JsonOut& copy_text(std::string_view json, std::string_view fallback);

  const std::string& text() const { return out_; }

 private:
  JsonOut& open(char c);
  JsonOut& close(char c);

  std::string out_;
  base::JsonWriter w_{out_, base::JsonDialect::compact_ascii()};
};

}  // namespace numprobe::serve
