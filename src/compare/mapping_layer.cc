// msprobe's layer mapping (-lm), rebuilt from its documented behaviour and the expected results
// in ../shared/fixtures/msprobe/cross_framework_ms_vs_pt: scopes per entry, a trie of scopes per
// side, target scopes renamed by the rules, then pairing by (scope, direction, position).
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "numprobe/compare/mapping.h"

namespace numprobe {
namespace {

constexpr const char* kTopLayer = "TopLayer";
constexpr const char* kNoMatch = "N/A";

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t k = 0; k <= s.size(); ++k) {
    if (k == s.size() || s[k] == '.') {
      out.push_back(s.substr(start, k - start));
      start = k + 1;
    }
  }
  return out;
}

std::string join(const std::vector<std::string_view>& parts, size_t begin, size_t end) {
  std::string s;
  for (size_t k = begin; k < end && k < parts.size(); ++k) {
    if (k > begin) s += '.';
    s += parts[k];
  }
  return s;
}

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// What one dump entry contributes to the trie.
struct Item {
  std::string name;
  std::string type_name;  // class of a module entry; the API name otherwise
  std::string api_name;   // the trie leaf: module attribute name or API name
  std::string state;      // forward | backward | parameters_grad
  std::string layer_scope, full_scope;
  bool valid = false;  // names with fewer than four components take no part
};

// The frames between the dump tool's API wrapper (a "Template" frame) and the first module
// construct/forward frame hold the call path inside the framework; the innermost framework
// function directly under user code names the API's caller ("__getitem__" for an add issued by
// Tensor indexing). Returns "" when there is none.
std::string framework_caller(const std::vector<std::string_view>& frames, bool mindspore) {
  long start = -1;
  size_t end = frames.size();
  for (size_t k = 0; k < frames.size(); ++k) {
    const std::string_view f = frames[k];
    if (contains(f, "Template")) {
      start = static_cast<long>(k);
    } else if (start >= 0 &&
               (mindspore ? contains(f, "construct")
                          : contains(f, "in forward,") || contains(f, "in backward,"))) {
      end = k;
      break;
    }
  }
  std::string_view caller;
  static const char* const kFrameworkFiles[] = {"site-packages/torch", "package/torch",
                                                "site-packages/mindspore", "package/mindspore"};
  for (size_t k = static_cast<size_t>(start + 1); k < end; ++k) {
    const std::string_view file = frames[k].substr(0, frames[k].find(','));
    bool framework = false;
    for (const char* ff : kFrameworkFiles) framework |= contains(file, ff);
    if (!framework) break;
    caller = frames[k];
  }
  if (caller.empty()) return "";
  const std::string_view file = caller.substr(0, caller.find(','));
  if (contains(file, "msprobe") || contains(file, "MindSpeed")) return "";
  // "File <path>, line <n>, in <func>, \n <code>": the third comma-separated field.
  size_t c1 = caller.find(',');
  size_t c2 = c1 == std::string_view::npos ? c1 : caller.find(',', c1 + 1);
  if (c2 == std::string_view::npos) return "";
  size_t c3 = caller.find(',', c2 + 1);
  std::string_view func = caller.substr(c2 + 1, c3 == std::string_view::npos ? c3 : c3 - c2 - 1);
  if (contains(func, "construct") || contains(func, "__call__")) return "";
  // second whitespace-separated word of " in <func>"
  std::vector<std::string_view> words;
  size_t k = 0;
  while (k < func.size()) {
    while (k < func.size() && (func[k] == ' ' || func[k] == '\t' || func[k] == '\n')) ++k;
    size_t b = k;
    while (k < func.size() && func[k] != ' ' && func[k] != '\t' && func[k] != '\n') ++k;
    if (k > b) words.push_back(func.substr(b, k - b));
  }
  return words.size() >= 2 ? std::string(words[1]) : "";
}

Item make_item(const RankDump& d, size_t e, bool mindspore) {
  Item it;
  it.name = std::string(d.dump.entry_name(e));
  const auto parts = split_dots(it.name);
  const size_t n = parts.size();
  if (n < 4) return it;
  it.valid = true;
  std::string_view api_type = parts[0];
  const bool module = api_type == "Cell" || api_type == "Module";
  if (parts[n - 1] == "parameters_grad") {  // legacy grads without a counter
    it.api_name = std::string(parts[n - 3]);
    it.type_name = std::string(parts[n - 2]);
    it.state = "parameters_grad";
    it.layer_scope = join(parts, 0, n - 3);
    it.full_scope = it.layer_scope + "." + it.api_name;
    return it;
  }
  it.type_name = std::string(parts[n - 3]);
  if (module) {
    it.api_name = std::string(parts[n - 4]);
    it.state = std::string(parts[n - 2]);
    it.layer_scope = join(parts, 0, n - 4);
    it.full_scope = it.layer_scope + "." + it.api_name;
    return it;
  }
  it.api_name = it.type_name;
  it.state = std::string(parts[n - 1]);
  std::optional<std::string_view> parent;
  if (d.construct) parent = d.construct->parent_of(it.name);
  if (parent && !parent->empty()) {
    const auto pp = split_dots(*parent);
    it.layer_scope = pp.size() >= 4 ? join(pp, 0, pp.size() - 3) : std::string(*parent);
  } else {
    it.layer_scope = kTopLayer;
  }
  std::string caller;
  // Primitive and Jit calls have no Python caller worth naming.
  if (d.stack && api_type != "Primitive" && api_type != "Jit") {
    if (const auto* ids = d.stack->frames_of(it.name)) {
      std::vector<std::string_view> frames;
      for (uint32_t id : *ids) frames.push_back(d.stack->strings.get(id));
      caller = framework_caller(frames, mindspore);
    }
  }
  it.full_scope = it.layer_scope + (caller.empty() ? "" : "." + caller) + "." + it.api_name;
  return it;
}

// Backward entries carry no stack: they take the scope of their forward entry where it exists.
void inherit_forward_scopes(std::vector<Item>& items) {
  std::unordered_map<std::string_view, size_t> by_name;
  for (size_t i = 0; i < items.size(); ++i) by_name.emplace(items[i].name, i);
  for (Item& it : items) {
    if (!it.valid) continue;
    auto parts = split_dots(it.name);
    const size_t n = parts.size();
    if (parts[n - 2] != "backward" && parts[n - 1] != "backward") continue;
    std::string fwd = join(parts, 0, n - 2);
    for (size_t k = n - 2; k < n; ++k) {
      std::string p(parts[k]);
      for (size_t at; (at = p.find("backward")) != std::string::npos;) p.replace(at, 8, "forward");
      fwd += "." + p;
    }
    auto f = by_name.find(fwd);
    if (f == by_name.end()) continue;
    it.layer_scope = items[f->second].layer_scope;
    it.full_scope = items[f->second].full_scope;
  }
}

// The component right after "<prefix>." in `scope`, if scope starts so.
std::optional<std::string_view> next_component(std::string_view scope, const std::string& prefix) {
  if (scope.size() <= prefix.size() || scope.compare(0, prefix.size(), prefix) != 0 ||
      scope[prefix.size()] != '.') {
    return std::nullopt;
  }
  std::string_view rest = scope.substr(prefix.size() + 1);
  size_t dot = rest.find('.');
  std::string_view c = rest.substr(0, dot);
  if (c.empty()) return std::nullopt;
  return c;
}

// The last run of digits in `s`, or -1.
long long last_number(std::string_view s) {
  size_t e = s.size();
  while (e > 0 && !(s[e - 1] >= '0' && s[e - 1] <= '9')) --e;
  if (e == 0) return -1;
  size_t b = e;
  while (b > 0 && s[b - 1] >= '0' && s[b - 1] <= '9') --b;
  if (e - b > 18) return -1;
  return std::stoll(std::string(s.substr(b, e - b)));
}

// Pipeline-parallel MindSpore numbers a ParallelTransformer's layers globally, PyTorch per stage:
// the layer indices under each ParallelTransformer are made relative to the smallest one.
void renumber_transformer_layers(std::vector<Item>& items) {
  std::vector<std::string> prefixes;
  for (const Item& it : items) {
    if (!it.valid || it.type_name != "ParallelTransformer") continue;
    std::string p = it.full_scope + ".layers";
    if (std::find(prefixes.begin(), prefixes.end(), p) == prefixes.end()) prefixes.push_back(p);
  }
  for (const std::string& prefix : prefixes) {
    long long lowest = std::numeric_limits<long long>::max();
    for (const Item& it : items) {
      auto c = next_component(it.full_scope, prefix);
      long long v = c ? last_number(*c) : -1;
      if (v >= 0) lowest = std::min(lowest, v);
    }
    if (lowest == std::numeric_limits<long long>::max()) continue;
    for (Item& it : items) {
      auto c = next_component(it.full_scope, prefix);
      long long v = c ? last_number(*c) : -1;
      if (v < 0) continue;
      const size_t rest = prefix.size() + 1 + c->size();
      it.full_scope = prefix + "." + std::to_string(v - lowest) + it.full_scope.substr(rest);
    }
  }
}

class ScopeTrie {
 public:
  ScopeTrie() { nodes_.push_back({kTopLayer, {}, {}}); }

  void insert(const std::vector<Item>& items, size_t i) {
    const auto parts = split_dots(items[i].full_scope);
    size_t node = 0;
    for (size_t k = 1; k < parts.size(); ++k) node = child_or_add(node, parts[k]);
    nodes_[node].items[items[i].state].push_back(i);
    nodes_[node].type_name = items[i].type_name;
  }

  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t child(size_t node, std::string_view name) const {
    auto it = nodes_[node].children.find(std::string(name));
    return it == nodes_[node].children.end() ? kNone : it->second;
  }
  // The node of a whole scope (its first component is the root).
  size_t find(std::string_view scope) const {
    const auto parts = split_dots(scope);
    size_t node = 0;
    for (size_t k = 1; k < parts.size() && node != kNone; ++k) node = child(node, parts[k]);
    return node;
  }
  const std::string& type_name(size_t node) const { return nodes_[node].type_name; }
  const std::vector<size_t>* items(size_t node, const std::string& state) const {
    auto it = nodes_[node].items.find(state);
    return it == nodes_[node].items.end() ? nullptr : &it->second;
  }

 private:
  struct TrieNode {
    std::string type_name;
    std::unordered_map<std::string, size_t> children;
    std::map<std::string, std::vector<size_t>> items;  // state -> item indices, dump order
  };
  size_t child_or_add(size_t node, std::string_view name) {
    size_t c = child(node, name);
    if (c != kNone) return c;
    nodes_.push_back({std::string(name), {}, {}});
    nodes_[node].children.emplace(std::string(name), nodes_.size() - 1);
    return nodes_.size() - 1;
  }
  std::vector<TrieNode> nodes_;
};

struct Side {
  std::vector<Item> items;
  ScopeTrie trie;
};

Side build_side(const RankDump& d) {
  Side s;
  const bool mindspore = d.dump.framework() == Framework::kMindSpore;
  for (size_t e = 0; e < d.dump.entries.size(); ++e) s.items.push_back(make_item(d, e, mindspore));
  inherit_forward_scopes(s.items);
  renumber_transformer_layers(s.items);
  for (size_t i = 0; i < s.items.size(); ++i)
    if (s.items[i].valid) s.trie.insert(s.items, i);
  return s;
}

// Rules by layer type, then by the first scope name they match; longer paths first.
struct Rule {
  std::string from, to;
  size_t levels;
};
using RuleIndex =
    std::unordered_map<std::string, std::unordered_map<std::string, std::vector<Rule>>>;

RuleIndex index_rules(const std::vector<LayerRule>& rules) {
  RuleIndex idx;
  for (const LayerRule& r : rules) {
    const auto parts = split_dots(r.from);
    idx[r.type][std::string(parts[0])].push_back({r.from, r.to, parts.size()});
  }
  for (auto& [type, by_first] : idx) {
    for (auto& [first, list] : by_first) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Rule& a, const Rule& b) { return a.levels > b.levels; });
    }
  }
  return idx;
}

// The golden scope of a target item, walking its own trie path so that each step knows the class
// of the layer it leaves.
std::string golden_scope(const Side& t, const Item& it, const RuleIndex& rules) {
  const auto parts = split_dots(it.full_scope);
  std::string scope = kTopLayer;
  size_t node = 0, k = 0;
  while (k + 1 < parts.size() && node != ScopeTrie::kNone) {
    const std::string_view next = parts[k + 1];
    size_t step = 1;
    std::string_view to = next;
    auto type = rules.find(t.trie.type_name(node));
    if (type != rules.end()) {
      auto cands = type->second.find(std::string(next));
      if (cands != type->second.end()) {
        for (const Rule& r : cands->second) {
          if (join(parts, k + 1, k + 1 + r.levels) == r.from) {
            to = r.to;
            step = r.levels;
            break;
          }
        }
      }
    }
    scope += ".";
    scope += to;
    for (size_t s = 0; s < step && node != ScopeTrie::kNone; ++s)
      node = t.trie.child(node, parts[++k]);
  }
  return scope;
}

}  // namespace

NamePairs layer_mapping_entries(const RankDump& target, const RankDump& golden,
                                const std::vector<LayerRule>& rules) {
  const Side t = build_side(target), g = build_side(golden);
  const RuleIndex idx = index_rules(rules);
  NamePairs out;
  out.reserve(t.items.size());
  for (size_t i = 0; i < t.items.size(); ++i) {
    const Item& it = t.items[i];
    std::string match = kNoMatch;
    if (it.valid) {
      const size_t own = t.trie.find(it.full_scope);
      const auto* mine = own == ScopeTrie::kNone ? nullptr : t.trie.items(own, it.state);
      const size_t pos =
          mine ? static_cast<size_t>(std::find(mine->begin(), mine->end(), i) - mine->begin()) : 0;
      const size_t gnode = g.trie.find(golden_scope(t, it, idx));
      const auto* theirs = gnode == ScopeTrie::kNone ? nullptr : g.trie.items(gnode, it.state);
      if (mine && theirs && pos < theirs->size()) match = g.items[(*theirs)[pos]].name;
    }
    out.emplace_back(it.name, std::move(match));
  }
  return out;
}

NamePairs data_mapping_of(const NamePairs& entries, const DumpFile& target, const DumpFile& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows) {
  auto rows_by_entry = [](const std::vector<CompareRow>& rows, size_t n) {
    std::vector<std::vector<uint32_t>> by(n);
    for (uint32_t r = 0; r < rows.size(); ++r)
      if (rows[r].entry < n) by[rows[r].entry].push_back(r);
    return by;
  };
  auto index_of = [](const DumpFile& d) {
    std::unordered_map<std::string_view, uint32_t> m;
    for (uint32_t e = 0; e < d.entries.size(); ++e) m.emplace(d.entry_name(e), e);
    return m;
  };
  const auto t_rows = rows_by_entry(target_rows, target.entries.size());
  const auto g_rows = rows_by_entry(golden_rows, golden.entries.size());
  const auto t_index = index_of(target), g_index = index_of(golden);
  NamePairs out;
  for (const auto& [tname, gname] : entries) {
    auto te = t_index.find(tname);
    if (te == t_index.end()) continue;
    std::unordered_map<std::string_view, std::string_view> by_suffix;
    auto ge = g_index.find(gname);
    if (ge != g_index.end()) {
      for (uint32_t r : g_rows[ge->second]) {
        const CompareRow& row = golden_rows[r];
        by_suffix.emplace(std::string_view(row.name).substr(row.suffix_at), row.name);
      }
    }
    for (uint32_t r : t_rows[te->second]) {
      const CompareRow& row = target_rows[r];
      auto m = by_suffix.find(std::string_view(row.name).substr(row.suffix_at));
      out.emplace_back(row.name,
                       m == by_suffix.end() ? std::string(kNoMatch) : std::string(m->second));
    }
  }
  return out;
}

}  // namespace numprobe
