// How one JSON scalar is spelled, in the two spellings numprobe writes (JsonWriter's dialects,
// json_writer.h, choose between them):
//  - Python's json.dump: strings with ensure_ascii escaping, floats as repr() with NaN / Infinity /
//    -Infinity unquoted — msprobe writes dump.json, stack.json and construct.json this way;
//  - plain JSON for programs: strings with UTF-8 kept as is, floats laid out as printf("%g") with
//    non-finite values as null.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace numprobe::base {

// repr(float) as CPython prints it: shortest round-trip digits, exponent form outside
// 1e-4 <= |v| < 1e16, always a '.0' or exponent so it reads back as a float.
void append_py_float(std::string& out, double v);
// The same into out[0..kMaxPyFloatChars); returns the length. No allocation: the capture writer
// formats several floats per dumped tensor.
inline constexpr size_t kMaxPyFloatChars = 32;
size_t format_py_float(char* out, double v);
// A JSON string literal with Python's ensure_ascii escaping (input is UTF-8; invalid bytes are
// escaped as \u00XX so output is always valid JSON).
void append_py_string(std::string& out, std::string_view s);

// A JSON string literal with UTF-8 kept: '"', '\\', \b \f \n \r \t escaped by name, other bytes
// below 0x20 as \u00xx (lowercase hex); an ill-formed UTF-8 sequence becomes U+FFFD, one per
// maximal subpart.
void append_json_string(std::string& out, std::string_view s);
// The shortest digits that read back as the same double, laid out as printf("%g"): decimal for
// 1e-4 <= |v| < 1e15 (with ".0" when integral), else d.ddde+XX; NaN and +-Infinity as null (JSON
// has neither). Until 2026-11 nlohmann/json wrote these files, and its Grisu2 sometimes chose
// longer digits for the same double (0.000649 as 0.0006489999999999999): every reader gets the
// same values, the text can be shorter.
void append_json_float(std::string& out, double v);

}  // namespace numprobe::base
