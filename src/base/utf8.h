// UTF-8 encoding and validation shared by the JSON and YAML readers and the JSON writers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace numprobe::base {

// Appends code point cp (at most U+10FFFF; the caller has validated it) as UTF-8.
inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The length (1 to 4) of the well-formed UTF-8 sequence at s[0..n), n >= 1; 0 when it is
// ill-formed, with *bad set to the length of its maximal ill-formed subpart (at least 1): the
// bytes that one U+FFFD replaces under Unicode's "substitution of maximal subparts". Overlong
// forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF are ill-formed.
inline size_t utf8_sequence(const unsigned char* s, size_t n, size_t* bad) {
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong below U+10000
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *bad = 1;  // a continuation byte, C0/C1 (always overlong) or F5..FF
    return 0;
  }
  for (size_t i = 1; i < len; ++i) {
    const unsigned char b = i < n ? s[i] : 0;
    if (i >= n || b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
      *bad = i;
      return 0;
    }
  }
  return len;
}

// Offset of the first ill-formed sequence of text, or text.size() when it is all well-formed.
inline size_t utf8_invalid_at(const char* text, size_t size) {
  const auto* s = reinterpret_cast<const unsigned char*>(text);
  size_t bad = 0;
  for (size_t i = 0; i < size;) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8_sequence(s + i, size - i, &bad);
    if (len == 0) return i;
    i += len;
  }
  return size;
}

}  // namespace numprobe::base
