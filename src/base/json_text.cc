#include "base/json_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/utf8.h"

namespace numprobe::base {

size_t format_py_float(char* out, double v) {
  char* o = out;
  auto put = [&](std::string_view t) {
    std::memcpy(o, t.data(), t.size());
    o += t.size();
  };
  if (std::isnan(v)) {
    put("NaN");
    return static_cast<size_t>(o - out);
  }
  if (std::isinf(v)) {
    put(v > 0 ? "Infinity" : "-Infinity");
    return static_cast<size_t>(o - out);
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  // buf = [-]d[.ddd]e(+|-)XX : split into sign, digits and decimal exponent. No allocation and
  // no printf: the writer thread formats several floats per dumped tensor.
  const char* p = buf;
  const bool neg = *p == '-';
  if (neg) ++p;
  char digits[32];
  int nd = 0;
  for (; p < r.ptr && *p != 'e'; ++p) {
    if (*p != '.') digits[nd++] = *p;
  }
  int exp10 = 0;
  if (p < r.ptr) {
    ++p;  // 'e'
    if (*p == '+') ++p;
    std::from_chars(p, r.ptr, exp10);
  }
  if (neg) *o++ = '-';
  const std::string_view all(digits, static_cast<size_t>(nd));
  auto zeros = [&](int n) {
    std::memset(o, '0', static_cast<size_t>(n));
    o += n;
  };
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      put("0.");
      zeros(-exp10 - 1);
      put(all);
    } else if (exp10 + 1 >= nd) {
      put(all);
      zeros(exp10 + 1 - nd);
      put(".0");
    } else {
      put(all.substr(0, static_cast<size_t>(exp10 + 1)));
      *o++ = '.';
      put(all.substr(static_cast<size_t>(exp10 + 1)));
    }
    return static_cast<size_t>(o - out);
  }
  *o++ = digits[0];
  if (nd > 1) {
    *o++ = '.';
    put(all.substr(1));
  }
  // Python's repr: e, sign, at least two exponent digits.
  const int e = exp10 < 0 ? -exp10 : exp10;
  put(exp10 < 0 ? "e-" : "e+");
  if (e < 10) *o++ = '0';
  auto er = std::to_chars(o, o + 8, e);
  o = er.ptr;
  return static_cast<size_t>(o - out);
}

void append_py_float(std::string& out, double v) {
  char buf[kMaxPyFloatChars];
  out.append(buf, format_py_float(buf, v));
}

namespace {
void append_u_escape(std::string& out, uint32_t unit) {
  char buf[8];
  snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

// Decodes one well-formed UTF-8 sequence at s[i]; returns its length, or 0 if invalid.
size_t decode_utf8(std::string_view s, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  size_t len;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8: escaping them
  // as one code point would not read back as the same bytes.
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || (cp >= 0xD800 && cp < 0xE000) || cp > 0x10FFFF) return 0;
  return len;
}
}  // namespace

void append_py_string(std::string& out, std::string_view s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      // Copy a run of plain ASCII at once.
      size_t j = i + 1;
      while (j < s.size()) {
        unsigned char d = static_cast<unsigned char>(s[j]);
        if (d < 0x20 || d >= 0x7f || d == '"' || d == '\\') break;
        ++j;
      }
      out.append(s.data() + i, j - i);
      i = j;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      append_u_escape(out, c);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t len = decode_utf8(s, i, cp);
    if (len == 0) {
      append_u_escape(out, c);
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      append_u_escape(out, 0xD800 + (cp >> 10));
      append_u_escape(out, 0xDC00 + (cp & 0x3FF));
    } else {
      append_u_escape(out, cp);
    }
    i += len;
  }
  out += '"';
}

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

}  // namespace numprobe::base
