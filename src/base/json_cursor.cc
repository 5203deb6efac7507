#include "base/json_cursor.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/utf8.h"
#include "numprobe/error.h"

namespace numprobe::base {

namespace {
bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string describe(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned char>(c));
  return buf;
}
}  // namespace

JsonCursor::JsonCursor(const char* data, size_t size, std::string name, int max_depth)
    : data_(data), size_(size), name_(std::move(name)), max_depth_(max_depth) {}

void JsonCursor::fail(const std::string& what) const {
  fail_at(pos_, what);
}

void JsonCursor::fail_at(size_t pos, const std::string& what) const {
  throw InputError(name_, syntax_label_ + ": " + what, static_cast<int64_t>(pos));
}

void JsonCursor::fail_schema_at(size_t pos, const std::string& what) const {
  throw InputError(name_, what, static_cast<int64_t>(pos));
}

void JsonCursor::skip_ws() {
  while (pos_ < size_ && is_ws(data_[pos_])) ++pos_;
}

JsonType JsonCursor::peek() {
  skip_ws();
  if (pos_ >= size_) fail("unexpected end of input (file truncated?)");
  switch (data_[pos_]) {
    case 'n':
      return JsonType::kNull;
    case 't':
    case 'f':
      return JsonType::kBool;
    case '"':
      return JsonType::kString;
    case '[':
      return JsonType::kArray;
    case '{':
      return JsonType::kObject;
    case '-':
    case 'N':
    case 'I':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
      return JsonType::kNumber;
    default:
      fail("unexpected " + describe(data_[pos_]));
  }
}

void JsonCursor::read_null() {
  skip_ws();
  if (size_ - pos_ >= 4 && memcmp(data_ + pos_, "null", 4) == 0) {
    pos_ += 4;
    return;
  }
  fail("expected null");
}

bool JsonCursor::read_bool() {
  skip_ws();
  if (size_ - pos_ >= 4 && memcmp(data_ + pos_, "true", 4) == 0) {
    pos_ += 4;
    return true;
  }
  if (size_ - pos_ >= 5 && memcmp(data_ + pos_, "false", 5) == 0) {
    pos_ += 5;
    return false;
  }
  fail("expected true or false");
}

JsonNumber JsonCursor::read_number() {
  skip_ws();
  JsonNumber n;
  auto match = [&](const char* word) {
    size_t len = strlen(word);
    if (size_ - pos_ >= len && memcmp(data_ + pos_, word, len) == 0) {
      pos_ += len;
      return true;
    }
    return false;
  };
  if (match("NaN")) {
    n.value = std::numeric_limits<double>::quiet_NaN();
    return n;
  }
  if (match("Infinity")) {
    n.value = std::numeric_limits<double>::infinity();
    return n;
  }
  if (match("-Infinity")) {
    n.value = -std::numeric_limits<double>::infinity();
    return n;
  }
  // Validate the strict JSON number grammar, then convert.
  size_t start = pos_, p = pos_;
  if (p < size_ && data_[p] == '-') ++p;
  if (p >= size_ || data_[p] < '0' || data_[p] > '9') fail_at(p, "malformed number");
  if (data_[p] == '0') {
    ++p;
  } else {
    while (p < size_ && data_[p] >= '0' && data_[p] <= '9') ++p;
  }
  bool integral = true;
  if (p < size_ && data_[p] == '.') {
    integral = false;
    ++p;
    if (p >= size_ || data_[p] < '0' || data_[p] > '9') fail_at(p, "malformed number fraction");
    while (p < size_ && data_[p] >= '0' && data_[p] <= '9') ++p;
  }
  if (p < size_ && (data_[p] == 'e' || data_[p] == 'E')) {
    integral = false;
    ++p;
    if (p < size_ && (data_[p] == '+' || data_[p] == '-')) ++p;
    if (p >= size_ || data_[p] < '0' || data_[p] > '9') fail_at(p, "malformed number exponent");
    while (p < size_ && data_[p] >= '0' && data_[p] <= '9') ++p;
  }
  if (integral) {
    auto r = std::from_chars(data_ + start, data_ + p, n.int_value);
    if (r.ec == std::errc() && r.ptr == data_ + p) {
      n.is_int = true;
      n.value = static_cast<double>(n.int_value);
      pos_ = p;
      return n;
    }
  }
  auto r = std::from_chars(data_ + start, data_ + p, n.value);
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars leaves value untouched on range errors; follow Python (overflow -> inf, tiny ->
    // 0).
    bool neg = data_[start] == '-';
    bool tiny = false;
    for (size_t i = start; i < p; ++i) {
      if ((data_[i] == 'e' || data_[i] == 'E') && i + 1 < p && data_[i + 1] == '-') tiny = true;
    }
    n.value = tiny ? (neg ? -0.0 : 0.0)
                   : (neg ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity());
  } else if (r.ec != std::errc() || r.ptr != data_ + p) {
    fail_at(start, "malformed number");
  }
  pos_ = p;
  return n;
}

uint32_t JsonCursor::parse_hex4() {
  if (size_ - pos_ < 4) fail("truncated \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = data_[pos_++];
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= static_cast<uint32_t>(c - 'A' + 10);
    } else {
      fail_at(pos_ - 1, "bad hex digit in \\u escape");
    }
  }
  return v;
}

std::string_view JsonCursor::parse_string_at() {
  // pos_ is at the opening quote.
  size_t start = ++pos_;
  // Fast path: no escapes -> view straight into the input.
  const void* q = memchr(data_ + pos_, '"', size_ - pos_);
  if (q != nullptr) {
    size_t end = static_cast<size_t>(static_cast<const char*>(q) - data_);
    const void* bs = memchr(data_ + pos_, '\\', end - pos_);
    if (bs == nullptr) {
      for (size_t i = start; i < end; ++i) {
        if (static_cast<unsigned char>(data_[i]) < 0x20) fail_at(i, "control character in string");
      }
      pos_ = end + 1;
      return std::string_view(data_ + start, end - start);
    }
  }
  scratch_.clear();
  while (true) {
    if (pos_ >= size_) fail_at(start - 1, "unterminated string");
    char c = data_[pos_];
    if (c == '"') {
      ++pos_;
      return scratch_;
    }
    if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
    if (c != '\\') {
      scratch_ += c;
      ++pos_;
      continue;
    }
    if (++pos_ >= size_) fail("truncated escape");
    char e = data_[pos_++];
    switch (e) {
      case '"':
        scratch_ += '"';
        break;
      case '\\':
        scratch_ += '\\';
        break;
      case '/':
        scratch_ += '/';
        break;
      case 'b':
        scratch_ += '\b';
        break;
      case 'f':
        scratch_ += '\f';
        break;
      case 'n':
        scratch_ += '\n';
        break;
      case 'r':
        scratch_ += '\r';
        break;
      case 't':
        scratch_ += '\t';
        break;
      case 'u': {
        uint32_t cp = parse_hex4();
        if (cp >= 0xD800 && cp < 0xDC00 && size_ - pos_ >= 6 && data_[pos_] == '\\' &&
            data_[pos_ + 1] == 'u') {
          size_t save = pos_;
          pos_ += 2;
          uint32_t lo = parse_hex4();
          if (lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else {
            pos_ = save;  // lone high surrogate: keep it as is (Python allows this)
          }
        }
        append_utf8(scratch_, cp);
        break;
      }
      default:
        fail_at(pos_ - 1, "bad escape " + describe(e));
    }
  }
}

std::string_view JsonCursor::read_string() {
  skip_ws();
  if (pos_ >= size_ || data_[pos_] != '"') fail("expected a string");
  return parse_string_at();
}

void JsonCursor::push() {
  if (++depth_ > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
  first_.push_back(1);
}

void JsonCursor::begin_array() {
  skip_ws();
  if (pos_ >= size_ || data_[pos_] != '[') fail("expected '['");
  ++pos_;
  push();
}

bool JsonCursor::next_item() {
  if (first_.empty()) fail("no open container (reader bug)");
  skip_ws();
  if (pos_ >= size_) fail("unexpected end of input inside an array (file truncated?)");
  if (data_[pos_] == ']') {
    ++pos_;
    --depth_;
    first_.pop_back();
    return false;
  }
  if (!first_.back()) {
    if (data_[pos_] != ',') fail("expected ',' or ']' in array, got " + describe(data_[pos_]));
    ++pos_;
    skip_ws();
    if (pos_ < size_ && data_[pos_] == ']') fail("trailing comma in array");
  }
  first_.back() = 0;
  return true;
}

void JsonCursor::begin_object() {
  skip_ws();
  if (pos_ >= size_ || data_[pos_] != '{') fail("expected '{'");
  ++pos_;
  push();
}

bool JsonCursor::next_key(std::string_view& key) {
  if (first_.empty()) fail("no open container (reader bug)");
  skip_ws();
  if (pos_ >= size_) fail("unexpected end of input inside an object (file truncated?)");
  if (data_[pos_] == '}') {
    ++pos_;
    --depth_;
    first_.pop_back();
    return false;
  }
  if (!first_.back()) {
    if (data_[pos_] != ',') fail("expected ',' or '}' in object, got " + describe(data_[pos_]));
    ++pos_;
    skip_ws();
  }
  first_.back() = 0;
  if (pos_ >= size_ || data_[pos_] != '"') fail("expected an object key string");
  key = parse_string_at();
  skip_ws();
  if (pos_ >= size_ || data_[pos_] != ':') fail("expected ':' after object key");
  ++pos_;
  return true;
}

void JsonCursor::skip_value() {
  switch (peek()) {
    case JsonType::kNull:
      read_null();
      break;
    case JsonType::kBool:
      read_bool();
      break;
    case JsonType::kNumber:
      read_number();
      break;
    case JsonType::kString:
      read_string();
      break;
    case JsonType::kArray:
      begin_array();
      while (next_item()) skip_value();
      break;
    case JsonType::kObject: {
      begin_object();
      std::string_view k;
      while (next_key(k)) skip_value();
      break;
    }
  }
}

std::string_view JsonCursor::raw_value() {
  skip_ws();
  size_t start = pos_;
  skip_value();
  return std::string_view(data_ + start, pos_ - start);
}

void JsonCursor::expect_end() {
  skip_ws();
  if (pos_ != size_) fail("trailing data after the JSON value");
}

}  // namespace numprobe::base
