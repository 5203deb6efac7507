// msprobe's GraphBuilder rules (visualization/builder/graph_builder.py), re-derived:
//  - a node per construct.json key, its parent the key's value (null: the root);
//  - a backward node whose parent is missing or sits in another module than the backward node
//    (an in-place layer whose backward hook never fired) takes the backward twin of its forward
//    node's parent, when that twin exists;
//  - consecutive APIs directly under the root are grouped into Apis_Between_Modules.N (two or
//  more);
//  - {module}.parameters_grad entries go under the module's last backward call;
//  - micro-steps: Megatron's [parent, micro_step] values, else a new micro-step at every module
//    forward at the root that follows a module backward.
#include "graph/graph_build.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <regex>

namespace numprobe::graph {
namespace {

// msprobe's NodeOp patterns: modules, then APIs; a name that is neither counts as a module.
bool is_api_name(std::string_view n) {
  auto starts = [&](std::initializer_list<std::string_view> prefixes) {
    for (std::string_view p : prefixes)
      if (n.substr(0, p.size()) == p) return true;
    return false;
  };
  if (starts({"Module.", "Cell.", "optimizer", "clip_grad"})) return false;
  return starts({"Tensor.", "Torch.", "Functional.", "NPU.", "VF.", "Distributed.", "Aten.",
                 "Mint.", "Primitive.", "Jit.", "MintFunctional.", "MindSpeed."});
}

// "X.backward.N" -> ("X", N), "" when the name does not end so.
bool split_direction(std::string_view n, std::string_view dir, std::string_view& stem,
                     std::string_view& number) {
  const size_t dot = n.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == n.size()) return false;
  number = n.substr(dot + 1);
  if (!std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  std::string_view head = n.substr(0, dot);
  if (head.size() <= dir.size() + 1 || head.substr(head.size() - dir.size()) != dir ||
      head[head.size() - dir.size() - 1] != '.')
    return false;
  stem = head.substr(0, head.size() - dir.size() - 1);
  return true;
}

std::string swap_direction(std::string_view name, std::string_view from, std::string_view to) {
  std::string_view stem, number;
  if (!split_direction(name, from, stem, number)) return {};
  std::string s(stem);
  s.append(".").append(to).append(".").append(number);
  return s;
}

class Builder {
 public:
  explicit Builder(const RankDump& d) : d_(d) {
    g_.owned_names.emplace_back(kRootName);
    // Sized up front: a million-entry dump would otherwise rehash it twenty times.
    g_.index.reserve(d.dump.entries.size() + 1);
    g_.root = add(g_.owned_names.back(), NodeType::kModule, kNoNode);
  }

  Graph run() {
    if (d_.construct && !d_.construct->edges.empty()) {
      from_construct(*d_.construct);
      attach_orphans();
    } else {
      g_.notes.push_back(
          "no construct.json (an L1 dump): the APIs hang from a flat root in execution order");
      for (size_t i = 0; i < d_.dump.entries.size(); ++i) get(d_.dump.entry_name(i), g_.root);
    }
    group_apis_between_modules();
    add_parameters_grad();
    if (!megatron_) split_micro_steps();
    assign_entries();
    return std::move(g_);
  }

 private:
  uint32_t add(std::string_view name, NodeType type, uint32_t parent) {
    const auto id = static_cast<uint32_t>(g_.nodes.size());
    GraphNode n;
    n.name = name;
    n.type = type;
    g_.nodes.push_back(std::move(n));
    g_.index.emplace(name, id);
    attach(id, parent);
    return id;
  }

  // msprobe's add_upnode: a node takes the first parent it is given and keeps it. A parent that
  // would close a cycle (construct.json saying A is in B and B in A) is replaced by the root, so
  // every node stays reachable and parent chains end.
  void attach(uint32_t id, uint32_t parent) {
    if (parent == kNoNode || id == parent || id == g_.root || g_.nodes[id].parent != kNoNode)
      return;
    for (uint32_t a = parent; a != kNoNode; a = g_.nodes[a].parent) {
      if (a == id) {
        parent = g_.root;
        break;
      }
    }
    g_.nodes[id].parent = parent;
    g_.nodes[parent].children.push_back(id);
  }

  // msprobe's _create_or_get_node: created once; `parent` (kNoNode for a node first seen as
  // somebody's parent) attaches it if it has no parent yet.
  uint32_t get(std::string_view name, uint32_t parent) {
    uint32_t id = g_.find(name);
    if (id == kNoNode)
      return add(name, is_api_name(name) ? NodeType::kApi : NodeType::kModule, parent);
    attach(id, parent);
    return id;
  }

  // Nodes only ever named as a parent have no place of their own: msprobe drops them (and their
  // subtrees) from the picture; numprobe hangs them from the root so that nothing is lost.
  void attach_orphans() {
    for (uint32_t id = 0; id < g_.nodes.size(); ++id) attach(id, g_.root);
  }

  void from_construct(const ConstructTable& c) {
    // The parent of a construct.json key (its first edge: a repeated key keeps its first value),
    // "" for null, nullopt for a name that is no key. Looked up through the table's own string
    // pool and an edge number per string rather than a map of a million names (80 MB a side).
    constexpr uint32_t kNoEdge = UINT32_MAX;
    std::vector<uint32_t> first_edge(c.strings.size(), kNoEdge);
    for (size_t i = 0; i < c.edges.size(); ++i) {
      uint32_t& f = first_edge[c.edges[i].node];
      if (f == kNoEdge) f = static_cast<uint32_t>(i);
    }
    auto parent_of = [&](std::string_view n) -> std::optional<std::string_view> {
      const uint32_t id = c.strings.find(n);
      if (id == kNoString || first_edge[id] == kNoEdge) return std::nullopt;
      return c.strings.get(c.edges[first_edge[id]].parent);
    };
    auto known = [&](const std::string& n) { return !n.empty() && parent_of(n).has_value(); };
    for (const ConstructEdge& e : c.edges) {
      const std::string_view node = c.strings.get(e.node);
      std::string_view up = e.parent == kNoString ? std::string_view() : c.strings.get(e.parent);
      std::string fixed;
      if (fix_backward_parent(node, up, parent_of, known, fixed))
        up = fixed.empty() ? std::string_view() : store(fixed);
      const uint32_t parent = up.empty() ? g_.root : get(up, kNoNode);
      const uint32_t id = get(node, parent);
      if (e.micro_step >= 0) {
        megatron_ = true;
        g_.nodes[id].micro_step = e.micro_step;
        g_.micro_steps = std::max(g_.micro_steps, e.micro_step + 1);
      }
    }
  }

  // msprobe's two backward fix-ups. Returns true and sets `fixed` ("" = the root) when the
  // backward node's parent is replaced.
  template <typename ParentOf, typename Known>
  bool fix_backward_parent(std::string_view node, std::string_view up, const ParentOf& parent_of,
                           const Known& known, std::string& fixed) {
    auto forward_parent = [&](const std::string& fwd) { return parent_of(fwd); };
    const std::string fwd = swap_direction(node, "backward", "forward");
    if (!up.empty()) {
      // An in-place layer whose backward hook never fired: the node claims a parent from another
      // module; its forward twin's parent, turned backward, is the right one.
      if (fwd.empty() || parts(node) < 5 || parts(up) < 4 ||
          module_prefix(node, 4) == module_prefix(up, 3))
        return false;
      auto fup = forward_parent(fwd);
      if (!fup) return false;
      if (fup->empty()) {
        fixed.clear();
        return true;
      }
      std::string twin = swap_direction(*fup, "forward", "backward");
      if (!known(twin)) return false;
      fixed = std::move(twin);
      return true;
    }
    // No parent: the backward twin of the forward call's parent, when the dump has it.
    std::string twin;
    if (!fwd.empty()) {
      auto fup = forward_parent(fwd);
      if (fup && !fup->empty()) twin = swap_direction(*fup, "forward", "backward");
    } else if (ends_with(node, ".backward")) {
      auto fup = forward_parent(std::string(node.substr(0, node.size() - 8)) + "forward");
      if (fup && !fup->empty()) twin = swap_direction(*fup, "forward", "backward");
    }
    if (!known(twin)) return false;
    fixed = std::move(twin);
    return true;
  }

  static bool ends_with(std::string_view s, std::string_view t) {
    return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
  }
  static size_t parts(std::string_view s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '.')) + 1;
  }

  // The module path of a name: the name without its last `tail` dot-separated parts.
  static std::string_view module_prefix(std::string_view n, int tail) {
    size_t end = n.size();
    for (int i = 0; i < tail; ++i) {
      end = n.rfind('.', end - 1);
      if (end == std::string_view::npos || end == 0) return {};
    }
    return n.substr(0, end);
  }

  std::string_view store(std::string s) {
    auto it = g_.index.find(s);
    if (it != g_.index.end()) return g_.nodes[it->second].name;
    g_.owned_names.push_back(std::move(s));
    return g_.owned_names.back();
  }

  void group_apis_between_modules() {
    std::vector<uint32_t> kids;
    kids.swap(g_.nodes[g_.root].children);
    int groups = 0;
    for (size_t i = 0; i < kids.size();) {
      if (g_.nodes[kids[i]].type != NodeType::kApi) {
        g_.nodes[g_.root].children.push_back(kids[i++]);
        continue;
      }
      size_t j = i;
      while (j < kids.size() && g_.nodes[kids[j]].type == NodeType::kApi) ++j;
      if (j - i < 2) {
        g_.nodes[g_.root].children.push_back(kids[i++]);
        continue;
      }
      g_.owned_names.push_back("Apis_Between_Modules." + std::to_string(groups++));
      const uint32_t c = add(g_.owned_names.back(), NodeType::kApiCollection, g_.root);
      g_.nodes[c].micro_step = g_.nodes[kids[i]].micro_step;
      for (; i < j; ++i) {
        g_.nodes[kids[i]].parent = c;
        g_.nodes[c].children.push_back(kids[i]);
      }
    }
  }

  void add_parameters_grad() {
    // {prefix} -> highest N among {prefix}.backward.N nodes (and among .forward.N, the fallback).
    std::unordered_map<std::string_view, std::pair<int64_t, uint32_t>> last_backward, last_forward;
    for (uint32_t id = 0; id < g_.nodes.size(); ++id) {
      std::string_view stem, number;
      const bool backward = split_direction(g_.nodes[id].name, "backward", stem, number);
      if (!backward && !split_direction(g_.nodes[id].name, "forward", stem, number)) continue;
      auto& last = backward ? last_backward : last_forward;
      int64_t k = 0;
      if (std::from_chars(number.data(), number.data() + number.size(), k).ec != std::errc())
        continue;
      auto [it, fresh] = last.emplace(stem, std::make_pair(k, id));
      if (!fresh && k > it->second.first) it->second = {k, id};
    }
    static const std::regex kGrad(R"(^(.*)\.parameters_grad(\.\d+)?$)");
    for (size_t i = 0; i < d_.dump.entries.size(); ++i) {
      const std::string_view name = d_.dump.entry_name(i);
      if (g_.find(name) != kNoNode || name.find(".parameters_grad") == std::string_view::npos)
        continue;
      std::match_results<std::string_view::const_iterator> m;
      if (!std::regex_match(name.begin(), name.end(), m, kGrad)) continue;
      const std::string_view module = name.substr(0, static_cast<size_t>(m.length(1)));
      // Without a backward call to hang from (an in-place layer after it kept the hook from
      // firing), msprobe drops the node; numprobe keeps it under the module's last forward call,
      // or the root, so that its data stays in the picture.
      auto it = last_backward.find(module);
      if (it == last_backward.end()) it = last_forward.find(module);
      const uint32_t parent = it == last_forward.end() ? g_.root : it->second.second;
      add(name, NodeType::kModule, parent);
    }
  }

  void split_micro_steps() {
    int64_t step = 0;
    bool backward_seen = false;
    for (uint32_t c : g_.nodes[g_.root].children) {
      const GraphNode& n = g_.nodes[c];
      if (n.type == NodeType::kModule) {
        if (n.name.find(".forward.") != std::string_view::npos) {
          if (backward_seen) {
            ++step;
            backward_seen = false;
          }
        } else {
          backward_seen = true;
        }
      }
      set_micro_step(c, step);
    }
    g_.micro_steps = step + 1;
  }

  void set_micro_step(uint32_t id, int64_t step) {
    std::vector<uint32_t> todo{id};
    while (!todo.empty()) {
      const uint32_t n = todo.back();
      todo.pop_back();
      g_.nodes[n].micro_step = step;
      todo.insert(todo.end(), g_.nodes[n].children.begin(), g_.nodes[n].children.end());
    }
  }

  // Each node's dump entry: the first entry of its name. Looked up once the graph stands, through
  // the graph's own index, so that no second name map (50 MB a side at a million entries) lives
  // through the build. A node the index does not find by its name is a made-up
  // Apis_Between_Modules.N whose name an earlier node has (a dump with such a key): by name too.
  void assign_entries() {
    std::unordered_multimap<std::string_view, uint32_t> shadowed;
    for (uint32_t id = 0; id < g_.nodes.size(); ++id)
      if (g_.find(g_.nodes[id].name) != id) shadowed.emplace(g_.nodes[id].name, id);
    auto take = [&](uint32_t id, size_t entry) {
      if (g_.nodes[id].entry < 0) g_.nodes[id].entry = static_cast<int64_t>(entry);
    };
    for (size_t i = 0; i < d_.dump.entries.size(); ++i) {
      const std::string_view name = d_.dump.entry_name(i);
      const uint32_t id = g_.find(name);
      if (id != kNoNode) take(id, i);
      if (shadowed.empty()) continue;
      const auto [b, e] = shadowed.equal_range(name);
      for (auto it = b; it != e; ++it) take(it->second, i);
    }
  }

  const RankDump& d_;
  Graph g_;
  bool megatron_ = false;
};

}  // namespace

std::vector<uint32_t> Graph::chain(uint32_t node) const {
  std::vector<uint32_t> c;
  for (uint32_t n = node; n != kNoNode; n = nodes[n].parent) c.push_back(n);
  std::reverse(c.begin(), c.end());
  return c;
}

std::vector<uint32_t> Graph::post_order() const {
  std::vector<uint32_t> order;
  order.reserve(nodes.size());
  if (root == kNoNode) return order;
  // (node, next child to visit); iterative so deep graphs cannot overflow the stack.
  std::vector<std::pair<uint32_t, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < nodes[n].children.size()) {
      const uint32_t c = nodes[n].children[next++];
      stack.emplace_back(c, 0);
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

Graph build_graph(const RankDump& d) {
  return Builder(d).run();
}

}  // namespace numprobe::graph
