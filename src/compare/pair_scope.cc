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

std::string op_key(std::string_view name) {
  EntryName e = parse_entry_name(name);
  if (e.index < 0) return std::string(name);
  std::string k(e.prefix);
  k += '.';
  k += e.op;
  k += '.';
  k += direction_name(e.direction);
  return k;
}

namespace {

int64_t counter_of(std::string_view name) {
  return parse_entry_name(name).index;
}

}  // namespace

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
                         const std::vector<std::string>& golden_keys,
                         const std::vector<std::string_view>& target_names,
                         const std::vector<bool>& open, EntryPairing& p, std::vector<bool>& used) {
  auto take = [&](uint32_t t, uint32_t g) {
    p.golden_of[t] = g;
    p.how[t] = target_names[t] == golden.entry_name(g) ? MatchKind::kExact : MatchKind::kRenumbered;
    used[g] = true;
  };
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
    // Call counters count every call of the op in the step, so an op called more or less often
    // elsewhere shifts them all by the same amount inside this module, while a backward entry
    // keeps its forward's counter whatever backward calls are missing around it. The shift that
    // lines up most calls pairs them (ties: none); calls left over pair in call order.
    std::unordered_map<int64_t, uint32_t> by_counter;
    for (uint32_t g : gs) by_counter.emplace(counter_of(golden.entry_name(g)), g);
    std::vector<int64_t> shifts{0};
    for (size_t n = 0; n < ts.size() && n < gs.size() && shifts.size() < 64; ++n) {
      const int64_t d = counter_of(golden.entry_name(gs[n])) - counter_of(target_names[ts[n]]);
      if (std::find(shifts.begin(), shifts.end(), d) == shifts.end()) shifts.push_back(d);
    }
    int64_t best = 0;
    size_t best_hits = 0;
    for (int64_t d : shifts) {
      size_t hits = 0;
      for (uint32_t t : ts) hits += by_counter.count(counter_of(target_names[t]) + d);
      if (hits > best_hits) {
        best = d;
        best_hits = hits;
      }
    }
    std::vector<uint32_t> left_t;
    for (uint32_t t : ts) {
      auto g = by_counter.find(counter_of(target_names[t]) + best);
      if (best_hits == 0 || g == by_counter.end() || used[g->second]) {
        left_t.push_back(t);
        continue;
      }
      take(t, g->second);
    }
    size_t n = 0;
    for (uint32_t t : left_t) {
      while (n < gs.size() && used[gs[n]]) ++n;
      if (n == gs.size()) break;
      take(t, gs[n++]);
    }
  }
}

void pair_backward_by_forward(const DumpFile& target, const DumpFile& golden, EntryPairing& p,
                              std::vector<bool>& used, const std::vector<bool>& closed) {
  auto swap_direction = [](std::string_view name, std::string_view from, std::string_view to) {
    std::string s(name);
    const size_t at = s.rfind(from);
    if (at == std::string::npos || at + from.size() != s.size()) return std::string();
    s.replace(at, from.size(), to);
    return s;
  };
  std::unordered_map<std::string_view, uint32_t> t_index, g_index;
  for (uint32_t i = 0; i < target.entries.size(); ++i) t_index.emplace(target.entry_name(i), i);
  for (uint32_t i = 0; i < golden.entries.size(); ++i) g_index.emplace(golden.entry_name(i), i);
  for (uint32_t i = 0; i < target.entries.size(); ++i) {
    if (closed[i] || p.golden_of[i] >= 0) continue;
    const std::string fwd = swap_direction(target.entry_name(i), ".backward", ".forward");
    auto f = fwd.empty() ? t_index.end() : t_index.find(fwd);
    if (f == t_index.end() || p.golden_of[f->second] < 0) continue;
    const std::string bwd = swap_direction(
        golden.entry_name(static_cast<size_t>(p.golden_of[f->second])), ".forward", ".backward");
    auto g = bwd.empty() ? g_index.end() : g_index.find(bwd);
    if (g == g_index.end() || used[g->second]) continue;
    p.golden_of[i] = g->second;
    p.how[i] = target.entry_name(i) == golden.entry_name(g->second) ? MatchKind::kExact
                                                                    : MatchKind::kRenumbered;
    used[g->second] = true;
  }
}

}  // namespace numprobe
