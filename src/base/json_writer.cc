#include "base/json_writer.h"

#include <charconv>
#include <cmath>

namespace numprobe::base {

void JsonWriter::newline_indent() {
  out_ += '\n';
  out_.append(static_cast<size_t>(depth_ * dialect_.indent), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (counts_.empty()) return;
  if (counts_.back()++ > 0) out_ += ',';
  if (dialect_.indent >= 0) newline_indent();
}

void JsonWriter::string_text(std::string_view s) {
  if (dialect_.ensure_ascii) {
    append_py_string(out_, s);
  } else {
    append_json_string(out_, s);
  }
}

void JsonWriter::key(std::string_view k) {
  before_value();
  string_text(k);
  out_ += dialect_.indent >= 0 ? ": " : ":";
  after_key_ = true;
}

void JsonWriter::open(char c) {
  before_value();
  out_ += c;
  counts_.push_back(0);
  ++depth_;
}

void JsonWriter::close(char c) {
  --depth_;
  if (dialect_.indent >= 0 && counts_.back() > 0) newline_indent();
  counts_.pop_back();
  out_ += c;
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
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, static_cast<size_t>(r.ptr - buf));
}

void JsonWriter::float_value(double v) {
  before_value();
  switch (dialect_.floats) {
    case JsonDialect::Floats::kPythonRepr:
      append_py_float(out_, v);
      break;
    case JsonDialect::Floats::kPythonReprNullNonFinite:
      if (std::isfinite(v)) {
        append_py_float(out_, v);
      } else {
        out_ += "null";
      }
      break;
    case JsonDialect::Floats::kPrintfG:
      append_json_float(out_, v);
      break;
  }
}

void JsonWriter::string_value(std::string_view s) {
  before_value();
  string_text(s);
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

void JsonWriter::raw_value(std::string_view text) {
  before_value();
  out_ += text;
}

}  // namespace numprobe::base
