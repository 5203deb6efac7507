// stack.json (call stacks per dump entry) and construct.json (entry -> enclosing module).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "numprobe/string_pool.h"

namespace numprobe {

// Both msprobe layouts load into this: the legacy {name: [frames]} and the de-duplicated
// {"0": [[names], [frames]], ...}. Groups keep file order.
struct StackTable {
  StringPool strings;
  std::vector<std::vector<uint32_t>> group_names;
  std::vector<std::vector<uint32_t>> group_frames;
  std::unordered_map<uint32_t, uint32_t> group_of;  // name id -> group
  bool deduplicated = true;

  // Frames recorded for an entry name, or nullptr.
  const std::vector<uint32_t>* frames_of(std::string_view name) const;
  size_t entry_count() const { return group_of.size(); }
};

struct ConstructEdge {
  uint32_t node = kNoString;
  uint32_t parent = kNoString;  // kNoString: null (a root)
  bool parent_is_list = false;  // Megatron form [parent, micro_step]
  uint8_t list_items = 0;       // items in that list (0..2), to write it back as it was
  int64_t micro_step = -1;
};

struct ConstructTable {
  StringPool strings;
  std::vector<ConstructEdge> edges;              // file order
  std::unordered_map<uint32_t, uint32_t> index;  // node id -> edge

  // Parent module of `node`; nullopt if unknown, "" if it is a root.
  std::optional<std::string_view> parent_of(std::string_view node) const;
};

// Throw InputError naming the file and position on malformed content.
StackTable read_stack_json(const std::string& path);
StackTable parse_stack_json(std::string_view text, const std::string& name);
ConstructTable read_construct_json(const std::string& path);
ConstructTable parse_construct_json(std::string_view text, const std::string& name);

// Write as msprobe does (json.dump indent=1, de-duplicated stack format unless the table was read
// from the legacy format).
std::string render_stack_json(const StackTable& t);
std::string render_construct_json(const ConstructTable& t);
// The value of one edge as it appears in construct.json (null, "parent" or [parent, micro_step]).
std::string render_construct_parent(const ConstructTable& t, const ConstructEdge& e);

}  // namespace numprobe
