// The JSON columns of a .vis.db (sub_nodes, matched_node_link, input_data / output_data,
// stack_info, node_colors, step_list), parsed leniently: a column that is empty, NULL or malformed
// reads as empty, because a viewer shows what it can of a damaged file rather than nothing.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/vis_db_reader.h"

namespace numprobe::graph {

// Writers, as Python's json.dumps writes them: ["a", "b"] and [0, 1].
std::string string_list_json(const std::vector<std::string>& items);
std::string int_list_json(const std::set<int64_t>& items);

// A JSON list of strings (non-strings are skipped).
std::vector<std::string> parse_string_list(std::string_view json);
// The number of items of a JSON list (0 when not a list).
int64_t count_list_items(std::string_view json);
// A JSON list of integers (non-integers are skipped).
std::vector<int64_t> parse_int_list(std::string_view json);
// {row: {field: value}}: strings as they are, other values as their JSON text.
std::vector<DataRow> parse_data_rows(std::string_view json);
// tb_config.node_colors: {"#RRGGBB": {"value": [lo, hi] | [], "description": str}}.
std::vector<ColorBin> parse_color_bins(std::string_view json);

}  // namespace numprobe::graph
