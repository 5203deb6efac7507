// The hierarchical graph of one rank dump (msprobe's GraphBuilder picture): one node per
// construct.json key under its parent module, consecutive top-level APIs grouped into
// Apis_Between_Modules.N, parameters_grad nodes under the last backward call of their module.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/vis_db_schema.h"

namespace numprobe::graph {

inline constexpr uint32_t kNoNode = UINT32_MAX;

struct GraphNode {
  std::string_view name;  // into the dump's tables or Graph::owned_names
  NodeType type = NodeType::kModule;
  uint32_t parent = kNoNode;
  std::vector<uint32_t> children;  // execution order
  int64_t entry = -1;              // DumpFile::entries index, -1 for a node without dump data
  int64_t micro_step = 0;
};

struct Graph {
  std::vector<GraphNode> nodes;  // nodes[root] is the model
  uint32_t root = kNoNode;
  // name -> node; emptied once a compare's two graphs are matched (find() then finds nothing)
  std::unordered_map<std::string_view, uint32_t> index;
  std::deque<std::string> owned_names;  // names the builder made up
  int64_t micro_steps = 1;
  std::vector<std::string> notes;  // what the build had to assume (an L1 dump's flat root, ...)

  uint32_t find(std::string_view name) const {
    auto it = index.find(name);
    return it == index.end() ? kNoNode : it->second;
  }
  // Root first, ending with `node`.
  std::vector<uint32_t> chain(uint32_t node) const;
  // msprobe's node_order: children before their parent, in execution order, the root last.
  std::vector<uint32_t> post_order() const;
};

}  // namespace numprobe::graph
