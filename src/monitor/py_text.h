// Numbers and strings as msprobe's Python writes them into monitor files: pandas' DataFrame.round
// (numpy's round: multiply by 10^n, round half to even, divide), str(float) and repr(str).
#pragma once

#include <string>
#include <string_view>

namespace numprobe::monitor {

// numpy.round(x, ndigits) for 0 <= ndigits <= 22: rint(x * 10^n) / 10^n in double arithmetic, the
// exact sequence numpy runs (so 1e17 rounds to 9.999999999999998e+16 as pandas writes it).
double numpy_round(double x, int ndigits);
// str(float) in Python: shortest round-trip digits; "nan", "inf", "-inf".
std::string py_float_str(double x);
// repr(str) in Python: single quotes unless the text holds a ' and no ", backslash escapes.
std::string py_str_repr(std::string_view s);

}  // namespace numprobe::monitor
