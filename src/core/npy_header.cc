// .npy header parsing: magic, version, header length and the Python dict literal that describes
// the array. Everything here treats the input as hostile (see numprobe/error.h).

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/npy.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr int kMaxNesting = 32;
// Bounds the parser's memory (a few dozen bytes per header byte in the worst case). Real headers
// are well under 1 KiB; numpy.load itself refuses more than 10000 bytes by default.
constexpr size_t kMaxHeaderLen = size_t{1} << 20;

// The subset of Python literals that can appear in a header.
struct PyValue {
  enum class Kind { kString, kInt, kFloat, kBool, kNone, kTuple, kList, kDict };
  Kind kind = Kind::kNone;
  std::string text;  // string contents, or the source of a number
  int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;     // tuple/list elements, dict values
  std::vector<std::string> keys;  // dict keys, parallel to items
  size_t offset = 0;              // file offset where the value starts
};

std::string_view kind_name(PyValue::Kind k) {
  switch (k) {
    case PyValue::Kind::kString:
      return "a string";
    case PyValue::Kind::kInt:
      return "an integer";
    case PyValue::Kind::kFloat:
      return "a float";
    case PyValue::Kind::kBool:
      return "a bool";
    case PyValue::Kind::kNone:
      return "None";
    case PyValue::Kind::kTuple:
      return "a tuple";
    case PyValue::Kind::kList:
      return "a list";
    case PyValue::Kind::kDict:
      return "a dict";
  }
  return "?";
}

class LiteralParser {
 public:
  LiteralParser(std::string_view text, size_t base, const std::string& name)
      : s_(text), base_(base), name_(name) {}

  PyValue parse_document() {
    skip_space();
    if (peek() != '{') fail("header is not a Python dict literal");
    PyValue v = parse_value(0);
    // numpy pads with spaces and ends with '\n'; tolerate any whitespace or NUL padding.
    while (pos_ < s_.size() && (is_space(s_[pos_]) || s_[pos_] == '\0')) ++pos_;
    if (pos_ != s_.size()) fail("unexpected characters after the header dict");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(name_, "malformed .npy header: " + what, static_cast<int64_t>(base_ + pos_));
  }
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= s_.size(); }
  void skip_space() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  PyValue parse_value(int depth) {
    if (depth > kMaxNesting) fail("nesting too deep");
    skip_space();
    if (at_end()) fail("unexpected end of header");
    const char c = peek();
    if (c == '{') return parse_dict(depth);
    if (c == '(') return parse_sequence(depth, ')', PyValue::Kind::kTuple);
    if (c == '[') return parse_sequence(depth, ']', PyValue::Kind::kList);
    if (c == '\'' || c == '"') return parse_string();
    if (c == '-' || c == '+' || (c >= '0' && c <= '9') || c == '.') return parse_number();
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return parse_identifier();
    fail(std::string("unexpected character '") + c + "'");
  }

  PyValue parse_dict(int depth) {
    PyValue v;
    v.kind = PyValue::Kind::kDict;
    v.offset = base_ + pos_;
    ++pos_;  // '{'
    for (;;) {
      skip_space();
      if (peek() == '}' && !at_end()) break;
      const size_t key_pos = pos_;
      PyValue key = parse_value(depth + 1);
      if (key.kind != PyValue::Kind::kString) {
        pos_ = key_pos;
        fail("dict keys must be strings");
      }
      for (const std::string& k : v.keys) {
        if (k == key.text) {
          pos_ = key_pos;
          fail("duplicate key '" + k + "'");
        }
      }
      expect(':');
      v.items.push_back(parse_value(depth + 1));
      v.keys.push_back(std::move(key.text));
      skip_space();
      if (peek() == ',' && !at_end()) {
        ++pos_;
        continue;
      }
      if (peek() != '}' || at_end()) fail("expected ',' or '}' in dict");
    }
    ++pos_;  // '}'
    return v;
  }

  PyValue parse_sequence(int depth, char close, PyValue::Kind kind) {
    PyValue v;
    v.kind = kind;
    v.offset = base_ + pos_;
    ++pos_;  // opening bracket
    for (;;) {
      skip_space();
      if (peek() == close && !at_end()) break;
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',' && !at_end()) {
        ++pos_;
        continue;
      }
      if (peek() != close || at_end()) fail(std::string("expected ',' or '") + close + "'");
    }
    ++pos_;
    return v;
  }

  PyValue parse_string() {
    PyValue v;
    v.kind = PyValue::Kind::kString;
    v.offset = base_ + pos_;
    const char quote = s_[pos_++];
    for (;;) {
      if (at_end()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == quote) break;
      if (c == '\n') fail("newline inside string");
      if (c == '\\') {
        if (at_end()) fail("unterminated string");
        v.text += s_[pos_++];  // \' \" \\ are all a descr needs
        continue;
      }
      v.text += c;
    }
    return v;
  }

  PyValue parse_number() {
    PyValue v;
    v.offset = base_ + pos_;
    const size_t start = pos_;
    bool negative = false;
    if (peek() == '-' || peek() == '+') negative = s_[pos_++] == '-';
    bool overflow = false;
    bool digits = false;
    uint64_t mag = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      digits = true;
      const auto d = static_cast<uint64_t>(peek() - '0');
      if (mag > (uint64_t{1} << 63) / 10 || mag * 10 > (uint64_t{1} << 63) - d) overflow = true;
      if (!overflow) mag = mag * 10 + d;
      ++pos_;
    }
    bool is_float = false;
    while (!at_end() &&
           (peek() == '.' || peek() == 'e' || peek() == 'E' || (peek() >= '0' && peek() <= '9') ||
            ((peek() == '-' || peek() == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')))) {
      is_float = true;
      ++pos_;
    }
    v.text = std::string(s_.substr(start, pos_ - start));
    if (!digits && !is_float) fail("malformed number '" + v.text + "'");
    if (is_float) {
      v.kind = PyValue::Kind::kFloat;
      return v;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long suffix, seen in old files
    if (overflow || (!negative && mag > static_cast<uint64_t>(INT64_MAX))) {
      pos_ = start;
      fail("integer " + v.text + " is out of range");
    }
    v.kind = PyValue::Kind::kInt;
    v.integer = negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
    return v;
  }

  PyValue parse_identifier() {
    PyValue v;
    v.offset = base_ + pos_;
    const size_t start = pos_;
    while (!at_end()) {
      const char c = peek();
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_')) {
        break;
      }
      ++pos_;
    }
    v.text = std::string(s_.substr(start, pos_ - start));
    if (v.text == "True" || v.text == "False") {
      v.kind = PyValue::Kind::kBool;
      v.boolean = v.text == "True";
    } else if (v.text == "None") {
      v.kind = PyValue::Kind::kNone;
    } else if (v.text == "nan" || v.text == "inf") {
      v.kind = PyValue::Kind::kFloat;
    } else {
      pos_ = start;
      fail("unexpected name '" + v.text + "'");
    }
    return v;
  }

  std::string_view s_;
  size_t base_;
  const std::string& name_;
  size_t pos_ = 0;
};

struct DescrInfo {
  DType dtype = DType::kUnknown;
  size_t itemsize = 0;
};

DescrInfo parse_descr(const PyValue& v, const std::string& name) {
  const auto offset = static_cast<int64_t>(v.offset);
  if (v.kind == PyValue::Kind::kList) {
    throw InputError(name, "structured dtypes (list descr) are not supported", offset);
  }
  if (v.kind != PyValue::Kind::kString) {
    throw InputError(name, "'descr' must be a string, got " + std::string(kind_name(v.kind)),
                     offset);
  }
  const std::string& d = v.text;
  if (d == "bfloat16") return {DType::kBF16, 2};
  if (d == "float8_e4m3fn") return {DType::kF8E4M3FN, 1};
  if (d == "float8_e5m2") return {DType::kF8E5M2, 1};
  if (d.size() >= 2 && (d[1] == 'O' || d == "O")) {
    throw InputError(name, "object arrays (descr '" + d + "') are not supported", offset);
  }
  if (d.size() == 3) {
    const char order = d[0];
    const std::string_view code = std::string_view(d).substr(1);
    struct Code {
      std::string_view code;
      DType dtype;
      size_t size;
    };
    static constexpr Code kCodes[] = {
        {"f8", DType::kF64, 8},     {"f4", DType::kF32, 4},     {"f2", DType::kF16, 2},
        {"i1", DType::kI8, 1},      {"i2", DType::kI16, 2},     {"i4", DType::kI32, 4},
        {"i8", DType::kI64, 8},     {"u1", DType::kU8, 1},      {"b1", DType::kBool, 1},
        {"u2", DType::kUnknown, 2}, {"u4", DType::kUnknown, 4}, {"u8", DType::kUnknown, 8},
    };
    for (const Code& c : kCodes) {
      if (code != c.code) continue;
      if (order == '<' || order == '|' || order == '=' || (order == '>' && c.size == 1)) {
        return {c.dtype, c.size};
      }
      if (order == '>') {
        throw InputError(name,
                         "big-endian dtype '" + d +
                             "' is not supported; re-save it little-endian (arr.astype('<" +
                             std::string(code) + "'))",
                         offset);
      }
    }
  }
  throw InputError(name, "unsupported dtype descr '" + d + "'", offset);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

NpyHeader parse_npy_header(const uint8_t* buf, size_t len, const std::string& name) {
  if (buf == nullptr) len = 0;
  if (len < kMagicLen || std::memcmp(buf, kMagic, kMagicLen) != 0) {
    throw InputError(name,
                     len < kMagicLen
                         ? "too short to be a .npy file (" + std::to_string(len) + " bytes)"
                         : "not a .npy file (bad magic)",
                     0);
  }
  if (len < kMagicLen + 2) throw InputError(name, "truncated .npy header (no version)", 6);
  NpyHeader h;
  h.major_version = buf[6];
  const int minor = buf[7];
  if (h.major_version < 1 || h.major_version > 3 || minor != 0) {
    throw InputError(name,
                     "unsupported .npy format version " + std::to_string(h.major_version) + "." +
                         std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)",
                     6);
  }
  const size_t len_bytes = h.major_version == 1 ? 2 : 4;
  const size_t prefix = 8 + len_bytes;
  if (len < prefix) throw InputError(name, "truncated .npy header (no header length)", 8);
  const size_t header_len = read_le(buf + 8, len_bytes);
  if (header_len > len - prefix) {
    throw InputError(name,
                     "header length " + std::to_string(header_len) + " extends past the end of " +
                         "the file (" + std::to_string(len) + " bytes)",
                     8);
  }
  if (header_len > kMaxHeaderLen) {
    throw InputError(name,
                     "header length " + std::to_string(header_len) + " exceeds the " +
                         std::to_string(kMaxHeaderLen) + "-byte limit",
                     8);
  }
  h.data_offset = prefix + header_len;

  const std::string_view text(reinterpret_cast<const char*>(buf + prefix), header_len);
  const PyValue dict = LiteralParser(text, prefix, name).parse_document();
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    if (dict.keys[i] == "descr") descr = &dict.items[i];
    if (dict.keys[i] == "fortran_order") fortran = &dict.items[i];
    if (dict.keys[i] == "shape") shape = &dict.items[i];
  }
  for (const auto& [ptr, key] : {std::pair{descr, "descr"}, std::pair{fortran, "fortran_order"},
                                 std::pair{shape, "shape"}}) {
    if (ptr == nullptr) {
      throw InputError(name, std::string("malformed .npy header: missing key '") + key + "'",
                       static_cast<int64_t>(prefix));
    }
  }

  const DescrInfo info = parse_descr(*descr, name);
  h.descr = descr->text;
  h.dtype = info.dtype;
  h.itemsize = info.itemsize;

  if (fortran->kind != PyValue::Kind::kBool) {
    throw InputError(name, "'fortran_order' must be True or False",
                     static_cast<int64_t>(fortran->offset));
  }
  h.fortran_order = fortran->boolean;

  if (shape->kind != PyValue::Kind::kTuple && shape->kind != PyValue::Kind::kList) {
    throw InputError(name, "'shape' must be a tuple, got " + std::string(kind_name(shape->kind)),
                     static_cast<int64_t>(shape->offset));
  }
  bool has_zero = false;
  for (size_t i = 0; i < shape->items.size(); ++i) {
    const PyValue& dim = shape->items[i];
    const auto at = static_cast<int64_t>(dim.offset);
    if (dim.kind != PyValue::Kind::kInt) {
      throw InputError(
          name,
          "shape dimension " + std::to_string(i) + " is " + std::string(kind_name(dim.kind)) +
              (dim.text.empty() ? "" : " (" + dim.text + ")") + ", not a non-negative integer",
          at);
    }
    if (dim.integer < 0) {
      throw InputError(name, "negative shape dimension " + std::to_string(dim.integer), at);
    }
    h.shape.push_back(dim.integer);
    has_zero = has_zero || dim.integer == 0;
  }
  size_t count = 1;
  if (has_zero) {
    count = 0;
  } else {
    for (int64_t dim : h.shape) {
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count)) {
        throw InputError(name, "shape " + shape_string(h.shape) + " has too many elements",
                         static_cast<int64_t>(shape->offset));
      }
    }
  }
  h.element_count = count;
  if (__builtin_mul_overflow(count, h.itemsize, &h.data_bytes)) {
    throw InputError(name, "shape " + shape_string(h.shape) + " of '" + h.descr + "' is too large",
                     static_cast<int64_t>(shape->offset));
  }
  if (h.data_bytes > len - h.data_offset) {
    throw InputError(name,
                     "data truncated: shape " + shape_string(h.shape) + " of '" + h.descr +
                         "' needs " + std::to_string(h.data_bytes) + " bytes but only " +
                         std::to_string(len - h.data_offset) + " follow the header",
                     static_cast<int64_t>(h.data_offset));
  }
  return h;
}

}  // namespace numprobe
