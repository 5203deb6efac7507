// The JSON members of a pack as a small tree (they are KB to MB): objects keep their key order,
// numbers keep their text (Python's repr, as json.dumps wrote it) beside their value.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace numprobe::configcheck {

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // a string's value, a number's token
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* find(const std::string& key) const;  // last of duplicate keys, as Python keeps
  bool is_number() const { return kind == kNumber; }
  // Python's str() of the value json.loads would give: 0.1, True, None, 'text' inside containers.
  std::string python_str() const;
  std::string python_repr() const;
};

// Parses text (a member `member` of pack `file`, both named in errors); throws InputError.
Json parse_json(const std::string& text, const std::string& file, const std::string& member);

}  // namespace numprobe::configcheck
