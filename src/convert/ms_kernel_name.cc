#include "convert/ms_kernel_name.h"

#include <charconv>
#include <vector>

namespace numprobe::convert {
namespace {

template <typename T>
bool parse_uint(std::string_view s, T& out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Cuts the last dot-separated field off `s`; false when there is no dot left.
bool take_last(std::string_view& s, std::string_view& field) {
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos) return false;
  field = s.substr(dot + 1);
  s = s.substr(0, dot);
  return !field.empty();
}

}  // namespace

std::optional<MsKernelFile> parse_ms_kernel_file(std::string_view name) {
  constexpr std::string_view kExt = ".npy";
  if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt)
    return std::nullopt;
  std::string_view s = name.substr(0, name.size() - kExt.size());
  std::string_view dtype, format, index, io, ts, stream, task;
  if (!take_last(s, dtype) || !take_last(s, format) || !take_last(s, index) || !take_last(s, io) ||
      !take_last(s, ts) || !take_last(s, stream) || !take_last(s, task))
    return std::nullopt;
  MsKernelFile f;
  if (io == "input")
    f.output = false;
  else if (io == "output")
    f.output = true;
  else
    return std::nullopt;
  if (!parse_uint(index, f.index) || !parse_uint(ts, f.timestamp) ||
      !parse_uint(stream, f.stream) || !parse_uint(task, f.task))
    return std::nullopt;
  size_t dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= s.size()) return std::nullopt;
  f.op_type = std::string(s.substr(0, dot));
  f.scope = std::string(s.substr(dot + 1));
  f.format = std::string(format);
  f.dtype = std::string(dtype);
  return f;
}

bool is_gradient_scope(std::string_view scope) {
  return scope.substr(0, 9) == "Gradients";
}

}  // namespace numprobe::convert
