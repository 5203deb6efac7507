#include "base/json_writer.h"

#include <charconv>
#include <cmath>

#include "base/py_json_writer.h"
#include "base/utf8.h"

namespace numprobe::base {

void append_json_string(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = p[i];
    if (c >= 0x80) {
      size_t bad = 0;
      const size_t len = utf8_sequence(p + i, s.size() - i, &bad);
      if (len == 0) {
        out += "\xEF\xBF\xBD";
        i += bad;
      } else {
        out.append(s.data() + i, len);
        i += len;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void append_json_float(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  // Python's repr is this layout except in [1e15, 1e16), which it still writes as decimals.
  const double a = std::fabs(v);
  if (a >= 1e15 && a < 1e16) {
    char buf[kMaxPyFloatChars];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    out.append(buf, r.ptr);
    return;
  }
  append_py_float(out, v);
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void JsonWriter::open(char c) {
  before_value();
  out_ += c;
  first_.push_back(true);
}

void JsonWriter::close(char c) {
  first_.pop_back();
  out_ += c;
}

void JsonWriter::key(std::string_view k) {
  before_value();
  append_json_string(out_, k);
  out_ += ':';
  after_key_ = true;
}

void JsonWriter::null_value() {
  before_value();
  out_ += "null";
}

void JsonWriter::bool_value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
}

void JsonWriter::int_value(int64_t v) {
  before_value();
  out_ += std::to_string(v);
}

void JsonWriter::float_value(double v) {
  before_value();
  append_json_float(out_, v);
}

void JsonWriter::string_value(std::string_view s) {
  before_value();
  append_json_string(out_, s);
}

void JsonWriter::int_array(const std::vector<int64_t>& values) {
  begin_array();
  for (int64_t v : values) int_value(v);
  end_array();
}

void JsonWriter::string_array(const std::vector<std::string>& values) {
  begin_array();
  for (const auto& v : values) string_value(v);
  end_array();
}

}  // namespace numprobe::base
