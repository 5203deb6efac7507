#include "serve/json_out.h"

#include <cmath>

#include "base/json_cursor.h"
#include "base/py_json_writer.h"
#include "numprobe/error.h"

namespace numprobe::serve {

void JsonOut::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonOut& JsonOut::open(char c) {
  before_value();
  out_ += c;
  first_.push_back(true);
  return *this;
}

JsonOut& JsonOut::close(char c) {
  out_ += c;
  first_.pop_back();
  return *this;
}

JsonOut& JsonOut::key(std::string_view k) {
  before_value();
  base::append_py_string(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonOut& JsonOut::str(std::string_view s) {
  before_value();
  base::append_py_string(out_, s);
  return *this;
}

JsonOut& JsonOut::num(int64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonOut& JsonOut::num(double v) {
  if (!std::isfinite(v)) return null();
  before_value();
  base::append_py_float(out_, v);
  return *this;
}

JsonOut& JsonOut::num(const std::optional<double>& v) {
  return v ? num(*v) : null();
}

JsonOut& JsonOut::boolean(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonOut& JsonOut::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonOut& JsonOut::strings(const std::vector<std::string>& list) {
  begin_array();
  for (const auto& s : list) str(s);
  return end_array();
}

JsonOut& JsonOut::copy(base::JsonCursor& c) {
  switch (c.peek()) {
    case base::JsonType::kNull:
      c.read_null();
      return null();
    case base::JsonType::kBool:
      return boolean(c.read_bool());
    case base::JsonType::kNumber: {
      const base::JsonNumber n = c.read_number();
      return n.is_int ? num(n.int_value) : num(n.value);
    }
    case base::JsonType::kString:
      return str(c.read_string());
    case base::JsonType::kArray:
      begin_array();
      c.begin_array();
      while (c.next_item()) copy(c);
      return end_array();
    case base::JsonType::kObject: {
      begin_object();
      c.begin_object();
      std::string_view k;
      while (c.next_key(k)) {
        key(k);
        copy(c);
      }
      return end_object();
    }
  }
  return *this;
}

JsonOut& JsonOut::copy_text(std::string_view json, std::string_view fallback) {
  // Render into a scratch writer first, so a malformed text leaves this one intact.
  JsonOut part;
  bool ok = false;
  if (json.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    try {
      base::JsonCursor c(json.data(), json.size(), "<json>", 64);
      part.copy(c);
      c.expect_end();
      ok = true;
    } catch (const InputError&) {
    }
  }
  before_value();
  out_ += ok ? std::string_view(part.out_) : fallback;
  return *this;
}

}  // namespace numprobe::serve
