#include <string>
#include <unordered_map>

#include "numprobe/compare_match.h"
#include "numprobe/entry_name.h"

namespace numprobe {
namespace {

// "Module.fc.Linear.parameters_grad" for Module.fc.Linear.parameters_grad.3: the op and direction
// without the call counter.
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

// For each entry, its ordinal among entries with the same op key.
std::vector<std::pair<std::string, uint32_t>> ordinals(const DumpFile& d) {
  std::unordered_map<std::string, uint32_t> seen;
  std::vector<std::pair<std::string, uint32_t>> out;
  out.reserve(d.entries.size());
  for (size_t i = 0; i < d.entries.size(); ++i) {
    std::string k = op_key(d.entry_name(i));
    uint32_t n = seen[k]++;
    out.emplace_back(std::move(k), n);
  }
  return out;
}

}  // namespace

const char* match_kind_name(MatchKind k) {
  switch (k) {
    case MatchKind::kExact:
      return "exact";
    case MatchKind::kRenumbered:
      return "renumbered";
    case MatchKind::kUnmatched:
      break;
  }
  return "unmatched";
}

EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden) {
  EntryPairing p;
  p.golden_of.assign(target.entries.size(), -1);
  p.how.assign(target.entries.size(), MatchKind::kUnmatched);
  std::vector<bool> used(golden.entries.size(), false);
  std::unordered_map<std::string_view, uint32_t> by_name;
  for (uint32_t i = 0; i < golden.entries.size(); ++i) by_name.emplace(golden.entry_name(i), i);
  for (size_t i = 0; i < target.entries.size(); ++i) {
    auto it = by_name.find(target.entry_name(i));
    if (it != by_name.end() && !used[it->second]) {
      p.golden_of[i] = it->second;
      p.how[i] = MatchKind::kExact;
      used[it->second] = true;
    }
  }
  // Renumbering: the n-th call of an op pairs with the n-th call of the same op, among entries
  // exact matching left over.
  auto to = ordinals(target), go = ordinals(golden);
  std::unordered_map<std::string, std::vector<uint32_t>> golden_calls;
  for (uint32_t i = 0; i < golden.entries.size(); ++i) {
    if (!used[i]) golden_calls[go[i].first].push_back(i);
  }
  std::unordered_map<std::string, size_t> next;
  for (size_t i = 0; i < target.entries.size(); ++i) {
    if (p.golden_of[i] >= 0) continue;
    auto it = golden_calls.find(to[i].first);
    if (it == golden_calls.end()) continue;
    size_t& k = next[to[i].first];
    if (k < it->second.size()) {
      uint32_t g = it->second[k++];
      p.golden_of[i] = g;
      p.how[i] = MatchKind::kRenumbered;
      used[g] = true;
    }
  }
  for (uint32_t i = 0; i < golden.entries.size(); ++i) {
    if (!used[i]) p.golden_only.push_back(i);
  }
  return p;
}

std::vector<RowPair> pair_rows(const EntryPairing& entries, const std::vector<CompareRow>& target,
                               const std::vector<CompareRow>& golden) {
  // Golden rows grouped by entry, in order.
  std::unordered_map<uint32_t, std::vector<uint32_t>> golden_by_entry;
  for (uint32_t i = 0; i < golden.size(); ++i) golden_by_entry[golden[i].entry].push_back(i);
  std::vector<RowPair> out;
  out.reserve(target.size() + 16);
  size_t i = 0;
  while (i < target.size()) {
    const uint32_t e = target[i].entry;
    size_t end = i;
    while (end < target.size() && target[end].entry == e) ++end;
    const int64_t g = entries.golden_of[e];
    std::vector<uint32_t> grows;
    if (g >= 0) grows = golden_by_entry[static_cast<uint32_t>(g)];
    std::vector<bool> taken(grows.size(), false);
    for (size_t t = i; t < end; ++t) {
      RowPair rp;
      rp.target = static_cast<int64_t>(t);
      std::string_view suffix = std::string_view(target[t].name).substr(target[t].suffix_at);
      for (size_t k = 0; k < grows.size(); ++k) {
        const CompareRow& gr = golden[grows[k]];
        if (!taken[k] && std::string_view(gr.name).substr(gr.suffix_at) == suffix) {
          taken[k] = true;
          rp.golden = grows[k];
          rp.how = entries.how[e];
          break;
        }
      }
      out.push_back(rp);
    }
    for (size_t k = 0; k < grows.size(); ++k) {
      if (!taken[k]) out.push_back({-1, static_cast<int64_t>(grows[k]), MatchKind::kUnmatched});
    }
    i = end;
  }
  for (uint32_t ge : entries.golden_only) {
    for (uint32_t r : golden_by_entry[ge])
      out.push_back({-1, static_cast<int64_t>(r), MatchKind::kUnmatched});
  }
  return out;
}

}  // namespace numprobe
