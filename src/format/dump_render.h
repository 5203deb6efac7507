// The text of dump entries, its one owner: a read DumpFile back to msprobe-format JSON (the
// inverse of read_dump_json), and the tensor leaves capture makes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/json_writer.h"
#include "numprobe/dump.h"

namespace numprobe::format {

// A tensor leaf as capture makes it (not read from a file): msprobe's members in the order of
// tensor_fields.h, then numprobe's non-finite counts when one of them is not zero.
struct LeafValues {
  std::string_view type, dtype;
  const int64_t* shape = nullptr;
  size_t ndim = 0;
  enum class Stats : uint8_t { kNull, kFloat, kBool } stats = Stats::kNull;
  double max = 0, min = 0, mean = 0, norm = 0;  // kBool: max = any(), min = all() (0 or 1)
  bool requires_grad = false;
  bool write_requires_grad = true;  // false: the member is left out (msprobe's MindSpore leaves)
  std::string_view md5;             // "": no md5 member
  std::string_view data_name;       // "": no data_name member
  uint64_t nan_count = 0, pos_inf_count = 0, neg_inf_count = 0;
};
// Writes the leaf as the value at w's position: the text w's typed calls would give.
void render_leaf(const LeafValues& v, base::JsonWriter& w);

// Writes the value of node `idx` of `nodes` (which is d.nodes or d.extra_nodes).
void render_node(const DumpFile& d, const std::vector<Node>& nodes, uint32_t idx,
                 base::JsonWriter& w);
// The body of entry i as it appears inside "data" (the text after `"name": `).
std::string render_entry_body(const DumpFile& d, size_t i);
// The top-level members other than "data", each rendered at depth 1 ("value" text only), in order.
std::vector<std::pair<std::string, std::string>> render_header_members(const DumpFile& d);
// A whole dump.json, as msprobe writes it.
std::string render_dump_json(const DumpFile& d);

}  // namespace numprobe::format
