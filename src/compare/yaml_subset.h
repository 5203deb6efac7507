// A strict reader for the subset of YAML that msprobe's mapping files use (docs/format.md,
// "Mapping files"): block maps and lists nested by indentation, `- key: value` list items,
// one-line flow lists `[0, 1]`, empty `{}` / `[]`, plain / 'single' / "double" quoted scalars and
// `#` comments. Everything else (anchors, aliases, tags, block scalars, flow maps, multi-line
// scalars, tabs in indentation, duplicate keys) is rejected with the file, line and column, never
// guessed at: a mapping file read wrongly pairs the wrong rows without any visible error.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace numprobe::compare_yaml {

struct Node {
  enum Kind { kScalar, kMap, kList };
  Kind kind = kScalar;
  int line = 0;         // 1-based line where the node starts
  std::string text;     // kScalar: the value, quotes resolved
  bool null = false;    // kScalar: an empty value (`key:` with nothing below), `~` or `null`
  bool quoted = false;  // kScalar: written in quotes (never null, never a number)
  std::vector<std::pair<std::string, Node>> map;  // kMap, in file order
  std::vector<Node> list;                         // kList
};

// Parses a whole document. An empty document (only comments) is an empty map. Throws InputError
// "<name>: line L, column C: <what>".
Node parse(std::string_view text, const std::string& name);

// Raises InputError "<name>: line L: <what>" for a node that has the wrong shape.
[[noreturn]] void fail(const std::string& name, int line, const std::string& what);

// A scalar as YAML text that reads back as the same string: plain when that is unambiguous,
// single-quoted otherwise.
std::string quote(std::string_view s);

}  // namespace numprobe::compare_yaml
