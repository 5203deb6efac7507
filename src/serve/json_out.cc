#include "serve/json_out.h"

#include "base/json_cursor.h"
#include "numprobe/error.h"

namespace numprobe::serve {

JsonOut& JsonOut::open(char c) {
  if (c == '{') {
    w_.begin_object();
  } else {
    w_.begin_array();
  }
  return *this;
}

JsonOut& JsonOut::close(char c) {
  if (c == '}') {
    w_.end_object();
  } else {
    w_.end_array();
  }
  return *this;
}

JsonOut& JsonOut::key(std::string_view k) {
  w_.key(k);
  return *this;
}

JsonOut& JsonOut::str(std::string_view s) {
  w_.string_value(s);
  return *this;
}

JsonOut& JsonOut::num(int64_t v) {
  w_.int_value(v);
  return *this;
}

JsonOut& JsonOut::num(double v) {
  w_.float_value(v);
  return *this;
}

JsonOut& JsonOut::num(const std::optional<double>& v) {
  return v ? num(*v) : null();
}

JsonOut& JsonOut::boolean(bool b) {
  w_.bool_value(b);
  return *this;
}

JsonOut& JsonOut::null() {
  w_.null_value();
  return *this;
}

JsonOut& JsonOut::strings(const std::vector<std::string>& list) {
  w_.string_array(list);
  return *this;
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
  w_.raw_value(ok ? std::string_view(part.out_) : fallback);
  return *this;
}

}  // namespace numprobe::serve
