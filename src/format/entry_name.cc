#include "format/entry_name.h"

#include <charconv>

namespace numprobe {
namespace {

bool parse_index(std::string_view s, int64_t& v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && v >= 0;
}

Direction direction_of(std::string_view s) {
  if (s == "forward") return Direction::kForward;
  if (s == "backward") return Direction::kBackward;
  if (s == "parameters_grad") return Direction::kParametersGrad;
  return Direction::kUnknown;
}

}  // namespace

std::string_view direction_name(Direction d) {
  switch (d) {
    case Direction::kForward:
      return "forward";
    case Direction::kBackward:
      return "backward";
    case Direction::kParametersGrad:
      return "parameters_grad";
    case Direction::kDebug:
      return "debug";
    case Direction::kUnknown:
      break;
  }
  return "unknown";
}

EntryName parse_entry_name(std::string_view name) {
  EntryName e;
  size_t first = name.find('.');
  e.prefix = name.substr(0, first);
  if (first == std::string_view::npos) return e;
  size_t last = name.rfind('.');
  std::string_view tail = name.substr(last + 1);
  std::string_view rest = name.substr(0, last);
  size_t second_last = rest.rfind('.');
  // "{name}.{n}" with no direction: a debug save().
  auto as_debug = [&] {
    int64_t idx = -1;
    if (parse_index(tail, idx)) {
      e.index = idx;
      e.direction = Direction::kDebug;
      e.op = name.substr(0, last);
      e.prefix = {};
    }
    return e;
  };
  if (second_last == std::string_view::npos || second_last < first) return as_debug();
  std::string_view middle = rest.substr(second_last + 1);
  int64_t idx = -1;
  // Module style: ... .{direction}.{n}
  if (parse_index(tail, idx) && direction_of(middle) != Direction::kUnknown) {
    e.index = idx;
    e.direction = direction_of(middle);
    e.is_module = true;
    e.op = name.substr(first + 1, second_last - first - 1);
    return e;
  }
  // API style: ... .{n}.{direction}
  if (direction_of(tail) != Direction::kUnknown && parse_index(middle, idx)) {
    e.index = idx;
    e.direction = direction_of(tail);
    e.op = name.substr(first + 1, second_last - first - 1);
    return e;
  }
  return as_debug();
}

}  // namespace numprobe
