#include "pair_scope.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "format/entry_name.h"

namespace numprobe {

std::vector<int64_t> enclosing_modules(const DumpFile& d, const ConstructTable* construct) {
  std::vector<int64_t> out(d.entries.size(), -1);
  if (!construct) return out;
  std::unordered_map<std::string_view, int64_t> index;
  for (size_t i = 0; i < d.entries.size(); ++i)
    index.emplace(d.entry_name(i), static_cast<int64_t>(i));
  for (size_t i = 0; i < d.entries.size(); ++i) {
    // A parent the dump does not hold (a module whose backward was not written) stands for its
    // own parent. Bounded: a malformed construct.json may hold a cycle.
    std::optional<std::string_view> parent = construct->parent_of(d.entry_name(i));
    for (size_t hops = 0; parent && !parent->empty() && hops < 64; ++hops) {
      auto it = index.find(*parent);
      if (it != index.end()) {
        if (it->second != static_cast<int64_t>(i)) out[i] = it->second;
        break;
      }
      parent = construct->parent_of(*parent);
    }
  }
  return out;
}

ScopeKeys scope_keys(const EntryScopes& s, const EntryPairing& p, const std::vector<bool>& used) {
  ScopeKeys k;
  k.target.assign(s.target.size(), -1);
  k.golden.assign(s.golden.size(), -1);
  for (size_t i = 0; i < s.target.size(); ++i) {
    int64_t a = s.target[i];
    for (size_t hops = 0; a >= 0 && hops < s.target.size(); ++hops, a = s.target[a]) {
      if (static_cast<size_t>(a) < p.golden_of.size() && p.golden_of[a] >= 0) {
        k.target[i] = p.golden_of[a];
        break;
      }
    }
  }
  for (size_t i = 0; i < s.golden.size(); ++i) {
    int64_t a = s.golden[i];
    for (size_t hops = 0; a >= 0 && hops < s.golden.size(); ++hops, a = s.golden[a]) {
      if (static_cast<size_t>(a) < used.size() && used[a]) {
        k.golden[i] = a;
        break;
      }
    }
  }
  return k;
}

void pair_within_modules(const DumpFile& target, const DumpFile& golden, const ScopeKeys& keys,
                         const std::vector<std::string>& target_keys,
                         const std::vector<std::string>& golden_keys, const std::vector<bool>& open,
                         EntryPairing& p, std::vector<bool>& used) {
  using Bucket = std::pair<int64_t, std::string_view>;  // (paired module, op key)
  std::map<Bucket, std::vector<uint32_t>> t_calls, g_calls;
  for (uint32_t i = 0; i < target.entries.size(); ++i)
    if (open[i]) t_calls[{keys.target[i], target_keys[i]}].push_back(i);
  for (uint32_t i = 0; i < golden.entries.size(); ++i)
    if (!used[i] && !parse_entry_name(golden.entry_name(i)).is_module)
      g_calls[{keys.golden[i], golden_keys[i]}].push_back(i);
  for (const auto& [bucket, ts] : t_calls) {
    auto it = g_calls.find(bucket);
    if (it == g_calls.end()) continue;
    const std::vector<uint32_t>& gs = it->second;
    // The same names on both sides: counters did not shift here, pair by name (what the n-th call
    // gives too, unless a dump left numbers out). Otherwise by call order inside the module.
    bool same_names = ts.size() == gs.size();
    if (same_names) {
      std::vector<std::string_view> a, b;
      for (uint32_t t : ts) a.push_back(target.entry_name(t));
      for (uint32_t g : gs) b.push_back(golden.entry_name(g));
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      same_names = a == b;
    }
    std::unordered_map<std::string_view, uint32_t> by_name;
    if (same_names)
      for (uint32_t g : gs) by_name.emplace(golden.entry_name(g), g);
    for (size_t n = 0; n < ts.size() && (same_names || n < gs.size()); ++n) {
      const uint32_t t = ts[n];
      const uint32_t g = same_names ? by_name.at(target.entry_name(t)) : gs[n];
      p.golden_of[t] = g;
      p.how[t] =
          target.entry_name(t) == golden.entry_name(g) ? MatchKind::kExact : MatchKind::kRenumbered;
      used[g] = true;
    }
  }
}

}  // namespace numprobe
