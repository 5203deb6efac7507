// DumpFile -> msprobe-format JSON text (the inverse of read_dump_json).
#pragma once

#include <string>

#include "format/py_json_writer.h"
#include "numprobe/dump.h"

namespace numprobe::format {

// Writes the value of node `idx` of `nodes` (which is d.nodes or d.extra_nodes).
void render_node(const DumpFile& d, const std::vector<Node>& nodes, uint32_t idx, PyJsonWriter& w);
// The body of entry i as it appears inside "data" (the text after `"name": `).
std::string render_entry_body(const DumpFile& d, size_t i);
// The top-level members other than "data", each rendered at depth 1 ("value" text only), in order.
std::vector<std::pair<std::string, std::string>> render_header_members(const DumpFile& d);
// A whole dump.json, as msprobe writes it.
std::string render_dump_json(const DumpFile& d);

}  // namespace numprobe::format
