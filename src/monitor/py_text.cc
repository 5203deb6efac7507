#include "monitor/py_text.h"

#include <cmath>
#include <cstdio>

#include "base/json_text.h"

namespace numprobe::monitor {

double numpy_round(double x, int ndigits) {
  // 10^n by repeated multiplication is exact for n <= 22, as numpy's power_of_ten.
  double f = 1.0;
  for (int i = 0; i < ndigits; ++i) f *= 10.0;
  return std::nearbyint(x * f) / f;
}

std::string py_float_str(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  std::string out;
  base::append_py_float(out, x);
  return out;
}

std::string py_str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);  // UTF-8 passes through, as Python prints printable text
    }
  }
  out += quote;
  return out;
}

}  // namespace numprobe::monitor
