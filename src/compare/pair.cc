#include <algorithm>
#include <string>
#include <unordered_map>

#include "api_signature.h"
#include "compare/kernel_names.h"
#include "format/entry_name.h"
#include "numprobe/compare/pair.h"
#include "pair_scope.h"

namespace numprobe {
namespace {

// The op under any of the namespaces one torch function is reachable from: nn.LSTM calls
// torch._VF.lstm, which is torch.lstm (msprobe names it VF.lstm); an F.relu stored before msprobe
// started calls torch.relu (Torch.relu), seen by numprobe as Functional.relu. "" for entries of
// other kinds (modules, collectives, aten ops).
std::string alias_key(std::string_view name) {
  EntryName e = parse_entry_name(name);
  if (e.index < 0 || e.is_module) return {};
  static constexpr std::string_view kAliased[] = {"Functional", "Torch", "Tensor", "VF"};
  if (std::find(std::begin(kAliased), std::end(kAliased), e.prefix) == std::end(kAliased))
    return {};
  std::string k(e.op);
  k += '.';
  k += direction_name(e.direction);
  return k;
}

std::vector<std::string> op_keys(const DumpFile& d) {
  std::vector<std::string> out;
  out.reserve(d.entries.size());
  for (size_t i = 0; i < d.entries.size(); ++i) out.push_back(op_key(d.entry_name(i)));
  return out;
}

}  // namespace

const char* match_kind_name(MatchKind k) {
  switch (k) {
    case MatchKind::kExact:
      return "exact";
    case MatchKind::kRenumbered:
      return "renumbered";
    case MatchKind::kAlias:
      return "alias";
    case MatchKind::kFuzzy:
      return "fuzzy";
    case MatchKind::kMapped:
      return "mapped";
    case MatchKind::kUnmatched:
      break;
  }
  return "unmatched";
}

namespace {

// Stages 0-2: the plan's pairs, exact names, renumbering. `closed` receives the target entries
// the plan keeps unmatched. With scopes, exact names and renumbering pair module entries only;
// API entries then pair inside the module instances paired with their own (pair_scope.h), and
// `keys` receives each entry's scope key for the later stages.
EntryPairing pair_by_name(const DumpFile& target, const DumpFile& golden, const MappingPlan* plan,
                          std::vector<bool>& closed, const EntryScopes* scopes = nullptr,
                          ScopeKeys* keys = nullptr) {
  const bool scoped = scopes && !scopes->empty() &&
                      scopes->target.size() == target.entries.size() &&
                      scopes->golden.size() == golden.entries.size();
  EntryPairing p;
  p.golden_of.assign(target.entries.size(), -1);
  p.how.assign(target.entries.size(), MatchKind::kUnmatched);
  closed.assign(target.entries.size(), false);
  std::vector<bool> used(golden.entries.size(), false);
  const bool planned = plan && plan->entry.size() == target.entries.size();
  for (size_t i = 0; planned && i < target.entries.size(); ++i) {
    const int64_t g = plan->entry[i];
    if (g == MappingPlan::kOpen) continue;
    if (g >= 0 && static_cast<size_t>(g) < golden.entries.size() && !used[g]) {
      p.golden_of[i] = g;
      p.how[i] = MatchKind::kMapped;
      used[g] = true;
    } else {
      closed[i] = true;
    }
  }
  // With scopes, API entries pair after the modules: forward ones inside their module pair,
  // backward ones with the backward of the forward they belong to (both tools name it by the
  // forward's counter; their construct.json parents of backward entries differ: msprobe puts a
  // BatchNorm's backward under the ReLU backward that ran before it), the rest by name as before.
  auto phase = [&](const DumpFile& d, size_t i) {
    if (!scoped) return 0;
    const EntryName e = parse_entry_name(d.entry_name(i));
    if (e.is_module) return 0;
    return e.direction == Direction::kForward ? 1 : e.direction == Direction::kBackward ? 2 : 0;
  };
  std::vector<int> t_phase(target.entries.size()), g_phase(golden.entries.size());
  for (size_t i = 0; i < t_phase.size(); ++i) t_phase[i] = phase(target, i);
  for (size_t i = 0; i < g_phase.size(); ++i) g_phase[i] = phase(golden, i);
  std::unordered_map<std::string_view, uint32_t> by_name;
  for (uint32_t i = 0; i < golden.entries.size(); ++i) by_name.emplace(golden.entry_name(i), i);
  const bool leftovers = std::count(used.begin(), used.end(), false) > 0 &&
                         std::count(p.how.begin(), p.how.end(), MatchKind::kUnmatched) > 0;
  std::vector<std::string> to = op_keys(target), go = op_keys(golden);
  for (size_t i = 0; planned && i < to.size(); ++i)
    if (i < plan->renamed.size() && !plan->renamed[i].empty()) to[i] = op_key(plan->renamed[i]);
  // Exact names, then renumbering: the n-th call of an op pairs with the n-th call of the same op,
  // among entries the earlier stages left over. A renamed entry counts as a call of its
  // golden-side op. Only entries of the given phase.
  auto by_names = [&](int which) {
    for (size_t i = 0; i < target.entries.size(); ++i) {
      if (closed[i] || p.golden_of[i] >= 0 || t_phase[i] != which) continue;
      auto it = by_name.find(target.entry_name(i));
      if (it != by_name.end() && !used[it->second] && g_phase[it->second] == which) {
        p.golden_of[i] = it->second;
        p.how[i] = MatchKind::kExact;
        used[it->second] = true;
      }
    }
    if (!leftovers) return;
    std::unordered_map<std::string, std::vector<uint32_t>> golden_calls;
    for (uint32_t i = 0; i < golden.entries.size(); ++i)
      if (!used[i] && g_phase[i] == which) golden_calls[go[i]].push_back(i);
    std::unordered_map<std::string, size_t> next;
    for (size_t i = 0; i < target.entries.size(); ++i) {
      if (p.golden_of[i] >= 0 || closed[i] || t_phase[i] != which) continue;
      auto it = golden_calls.find(to[i]);
      if (it == golden_calls.end()) continue;
      size_t& k = next[to[i]];
      if (k < it->second.size()) {
        uint32_t g = it->second[k++];
        p.golden_of[i] = g;
        p.how[i] = MatchKind::kRenumbered;
        used[g] = true;
      }
    }
  };
  by_names(0);
  ScopeKeys none;
  ScopeKeys& sk = keys ? *keys : none;
  if (scoped) {
    sk = scope_keys(*scopes, p, used);
    std::vector<bool> open(target.entries.size(), false);
    for (size_t i = 0; i < open.size(); ++i)
      open[i] = t_phase[i] == 1 && !closed[i] && p.golden_of[i] < 0;
    std::vector<std::string_view> names(target.entries.size());
    for (size_t i = 0; i < names.size(); ++i)
      names[i] = planned && i < plan->renamed.size() && !plan->renamed[i].empty()
                     ? std::string_view(plan->renamed[i])
                     : target.entry_name(i);
    pair_within_modules(target, golden, sk, to, go, names, open, p, used);
    pair_backward_by_forward(target, golden, p, used, closed);
    by_names(2);
    // Backward API entries are not scoped (their construct.json parents differ between tools).
    for (size_t i = 0; i < t_phase.size(); ++i)
      if (t_phase[i] == 2) sk.target[i] = -1;
    for (size_t i = 0; i < g_phase.size(); ++i)
      if (g_phase[i] == 2) sk.golden[i] = -1;
  }
  // Aliases: the n-th leftover call of an op pairs with the n-th leftover call of the same op
  // under another namespace (alias_key), inside the same pair of module instances.
  auto scope_of = [&](const std::vector<int64_t>& k, size_t i) -> int64_t {
    return i < k.size() ? k[i] : -1;
  };
  if (leftovers) {
    std::unordered_map<std::string, std::vector<uint32_t>> alias_calls;
    for (uint32_t i = 0; i < golden.entries.size(); ++i) {
      if (used[i]) continue;
      std::string k = alias_key(golden.entry_name(i));
      if (!k.empty()) alias_calls[std::to_string(scope_of(sk.golden, i)) + ':' + k].push_back(i);
    }
    std::unordered_map<std::string, size_t> alias_next;
    for (size_t i = 0; !alias_calls.empty() && i < target.entries.size(); ++i) {
      if (p.golden_of[i] >= 0 || closed[i]) continue;
      std::string k = alias_key(target.entry_name(i));
      if (!k.empty()) k = std::to_string(scope_of(sk.target, i)) + ':' + k;
      auto it = k.empty() ? alias_calls.end() : alias_calls.find(k);
      if (it == alias_calls.end()) continue;
      size_t& n = alias_next[k];
      if (n < it->second.size()) {
        const uint32_t g = it->second[n++];
        p.golden_of[i] = g;
        p.how[i] = MatchKind::kAlias;
        used[g] = true;
      }
    }
  }
  for (uint32_t i = 0; i < golden.entries.size(); ++i) {
    if (!used[i]) p.golden_only.push_back(i);
  }
  return p;
}

}  // namespace

EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden) {
  std::vector<bool> closed;
  return pair_by_name(target, golden, nullptr, closed);
}

namespace {

// What the fuzzy stage compares of an entry: direction, op (prefix dropped), and the signature of
// its tensor rows ("in:[2,3]f32;out:[2,3]f32").
struct EntryShape {
  Direction direction = Direction::kUnknown;
  int64_t scope = -1;  // ScopeKeys: entries inside other module pairs never pair
  std::string op;
  std::string signature;
  bool kernel = false;     // a converted kernel (Kernel.*): pairs with an API by kernel_key only
  std::string kernel_key;  // kernel_pairing_key
};

std::vector<EntryShape> entry_shapes(const DumpFile& d, const std::vector<CompareRow>& rows) {
  std::vector<EntryShape> out(d.entries.size());
  for (size_t i = 0; i < d.entries.size(); ++i) {
    EntryName e = parse_entry_name(d.entry_name(i));
    out[i].direction = e.direction;
    out[i].op = std::string(e.op);
    out[i].kernel = is_kernel_prefix(e.prefix);
    out[i].kernel_key = kernel_pairing_key(e.prefix, e.op);
  }
  for (const CompareRow& r : rows) {
    if (r.entry >= out.size() || r.kind != RowKind::kTensor) continue;
    std::string& sig = out[r.entry].signature;
    sig += r.state == RowState::kOutput ? 'o' : 'i';
    sig += '[';
    for (int64_t dim : r.shape) {
      sig += std::to_string(dim);
      sig += ',';
    }
    sig += ']';
    sig += std::string(dtype_name(r.element_type));
    sig += ';';
  }
  return out;
}

// 0 = never pair. Same op and same signature beats either alone.
int fuzzy_score(const EntryShape& t, const EntryShape& g) {
  if (t.direction != g.direction || t.scope != g.scope) return 0;
  int s = 0;
  if (t.kernel != g.kernel) {
    // A kernel and an API of the same shapes are often unrelated ops: the name must agree. A
    // gradient kernel (MatMul under Gradients/) is another op than the API's backward entry.
    if (t.kernel_key != g.kernel_key || t.direction != Direction::kForward) return 0;
    s += 3;
  } else if (t.op == g.op) {
    s += 3;
  }
  if (!t.signature.empty() && t.signature == g.signature) s += 2;
  return s;
}

// Aligns target[ta, tb) with golden[ga, gb) (both: leftover entry indices) maximising the total
// score; O(n m) cells, so windows are bounded by the caller.
void align_window(const std::vector<uint32_t>& ts, const std::vector<uint32_t>& gs,
                  const std::vector<EntryShape>& tsh, const std::vector<EntryShape>& gsh,
                  EntryPairing& p, std::vector<bool>& used) {
  const size_t n = ts.size(), m = gs.size();
  if (n == 0 || m == 0) return;
  std::vector<int32_t> dp((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> int32_t& { return dp[i * (m + 1) + j]; };
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int32_t best = std::max(at(i - 1, j), at(i, j - 1));
      int sc = fuzzy_score(tsh[ts[i - 1]], gsh[gs[j - 1]]);
      if (sc >= 2) best = std::max(best, at(i - 1, j - 1) + sc);
      at(i, j) = best;
    }
  }
  for (size_t i = n, j = m; i > 0 && j > 0;) {
    int sc = fuzzy_score(tsh[ts[i - 1]], gsh[gs[j - 1]]);
    if (sc >= 2 && at(i, j) == at(i - 1, j - 1) + sc) {
      p.golden_of[ts[i - 1]] = gs[j - 1];
      p.how[ts[i - 1]] = MatchKind::kFuzzy;
      used[gs[j - 1]] = true;
      --i;
      --j;
    } else if (at(i, j) == at(i - 1, j)) {
      --i;
    } else {
      --j;
    }
  }
}

// Rows are contiguous per entry: [begin[e], end[e]) for each entry e.
void entry_ranges(const std::vector<CompareRow>& rows, size_t entries, std::vector<uint32_t>& begin,
                  std::vector<uint32_t>& end) {
  begin.assign(entries, 0);
  end.assign(entries, 0);
  for (uint32_t i = 0; i < rows.size(); ++i) {
    const uint32_t e = rows[i].entry;
    if (e >= entries) continue;
    if (end[e] == 0) begin[e] = i;
    end[e] = i + 1;
  }
}

std::string_view suffix(const CompareRow& r) {
  return std::string_view(r.name).substr(r.suffix_at);
}

// Pairs the unpaired rows out[first..] of one entry with untaken golden rows in [g0, g1) whose
// suffix is the other spelling of the same input.
void pair_by_signature(std::vector<RowPair>& out, size_t first,
                       const std::vector<CompareRow>& target, const std::vector<CompareRow>& golden,
                       uint32_t g0, uint32_t g1, std::vector<bool>& taken, MatchKind how) {
  std::string api;
  for (size_t j = first; j < out.size(); ++j) {
    RowPair& rp = out[j];
    if (rp.golden >= 0 || rp.how == MatchKind::kMapped) continue;
    const CompareRow& t = target[static_cast<size_t>(rp.target)];
    if (t.state != RowState::kInput) continue;
    if (api.empty()) api = forward_api_of(t);
    if (api.empty()) return;
    // Suffixes start with the '.' after the entry name.
    std::string_view own = suffix(t);
    const bool dotted = !own.empty() && own.front() == '.';
    if (dotted) own.remove_prefix(1);
    std::string other = other_input_spelling(api, own);
    if (other.empty()) continue;
    if (dotted) other.insert(other.begin(), '.');
    for (uint32_t k = g0; k < g1; ++k) {
      if (!taken[k] && suffix(golden[k]) == other) {
        rp.golden = k;
        rp.how = how;
        taken[k] = true;
        break;
      }
    }
  }
}

}  // namespace

EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows, const MappingPlan* plan,
                          const EntryScopes* scopes) {
  std::vector<bool> closed;
  ScopeKeys keys;
  EntryPairing p = pair_by_name(target, golden, plan, closed, scopes, &keys);
  if (p.golden_only.empty()) return p;
  std::vector<bool> used(golden.entries.size(), true);
  for (uint32_t g : p.golden_only) used[g] = false;
  auto tsh = entry_shapes(target, target_rows);
  auto gsh = entry_shapes(golden, golden_rows);
  for (size_t i = 0; i < keys.target.size() && i < tsh.size(); ++i) tsh[i].scope = keys.target[i];
  for (size_t i = 0; i < keys.golden.size() && i < gsh.size(); ++i) gsh[i].scope = keys.golden[i];
  // Windows between anchors: the leftover target entries after anchor k and before anchor k+1
  // align with the leftover golden entries between the anchors' golden positions. Anchors that
  // break golden order (a renumbered pair crossing another) are skipped.
  std::vector<uint32_t> ts, gs;
  int64_t last_golden = -1;
  auto flush = [&](int64_t golden_end) {
    gs.clear();
    for (int64_t g = last_golden + 1; g < golden_end; ++g)
      if (!used[static_cast<size_t>(g)]) gs.push_back(static_cast<uint32_t>(g));
    // Bound the work of one window (n*m cells); a larger gap is aligned in slices.
    constexpr size_t kMaxCells = size_t{1} << 24;
    if (ts.size() * gs.size() <= kMaxCells) {
      align_window(ts, gs, tsh, gsh, p, used);
    }
    ts.clear();
  };
  for (size_t i = 0; i < target.entries.size(); ++i) {
    const int64_t g = p.golden_of[i];
    if (g < 0) {
      if (!closed[i]) ts.push_back(static_cast<uint32_t>(i));
    } else if (g > last_golden) {
      flush(g);
      last_golden = g;
    }
  }
  flush(static_cast<int64_t>(golden.entries.size()));
  p.golden_only.clear();
  for (uint32_t i = 0; i < golden.entries.size(); ++i)
    if (!used[i]) p.golden_only.push_back(i);
  return p;
}

std::vector<RowPair> pair_rows(const EntryPairing& entries, const std::vector<CompareRow>& target,
                               const std::vector<CompareRow>& golden, const MappingPlan* plan) {
  const size_t n_target = entries.golden_of.size();
  size_t n_golden = 0;
  for (const CompareRow& r : golden) n_golden = std::max<size_t>(n_golden, r.entry + 1);
  for (int64_t g : entries.golden_of)
    n_golden = std::max<size_t>(n_golden, static_cast<size_t>(g + 1));
  for (uint32_t g : entries.golden_only) n_golden = std::max<size_t>(n_golden, g + 1);
  std::vector<uint32_t> tb, te, gb, ge;
  entry_ranges(target, n_target, tb, te);
  entry_ranges(golden, n_golden, gb, ge);

  // Rows the plan pairs claim their golden rows first, wherever those are.
  std::vector<bool> taken(golden.size(), false);
  std::vector<int64_t> forced(target.size(), MappingPlan::kOpen);
  const bool planned = plan && plan->row.size() == target.size();
  for (size_t t = 0; planned && t < target.size(); ++t) {
    const int64_t g = plan->row[t];
    if (g == MappingPlan::kOpen) continue;
    if (g >= 0 && static_cast<size_t>(g) < golden.size() && !taken[g]) {
      taken[g] = true;
      forced[t] = g;
    } else {
      forced[t] = -1;
    }
  }
  auto dtype_checked = [&](size_t t) {
    return !(plan && t < plan->row_dtype_unchecked.size() && plan->row_dtype_unchecked[t]);
  };

  std::vector<RowPair> out;
  out.reserve(target.size() + 16);
  std::unordered_map<std::string_view, uint32_t> by_suffix;
  // Every target entry, rows or not, so that golden rows of a paired entry are never lost.
  for (size_t e = 0; e < n_target; ++e) {
    const int64_t g = entries.golden_of[e];
    const uint32_t g0 = g >= 0 ? gb[g] : 0, g1 = g >= 0 ? ge[g] : 0;
    // Few rows: scan; many (a long list output): index by suffix.
    const bool indexed = g1 - g0 > 32;
    if (indexed) {
      by_suffix.clear();
      for (uint32_t k = g0; k < g1; ++k) by_suffix.emplace(suffix(golden[k]), k);
    }
    for (uint32_t t = tb[e]; t < te[e]; ++t) {
      RowPair rp;
      rp.target = t;
      rp.dtype_checked = dtype_checked(t);
      if (forced[t] != MappingPlan::kOpen) {
        rp.golden = forced[t];
        if (rp.golden >= 0) rp.how = MatchKind::kMapped;
        out.push_back(rp);
        continue;
      }
      const std::string_view s = suffix(target[t]);
      if (indexed) {
        auto it = by_suffix.find(s);
        if (it != by_suffix.end() && !taken[it->second]) rp.golden = it->second;
      } else {
        for (uint32_t k = g0; k < g1; ++k) {
          if (!taken[k] && suffix(golden[k]) == s) {
            rp.golden = k;
            break;
          }
        }
      }
      if (rp.golden >= 0) {
        taken[rp.golden] = true;
        rp.how = entries.how[e];
      }
      out.push_back(rp);
    }
    // Inputs one run passed by position and the other by keyword pair through the API's
    // signature (api_signature.h).
    if (g >= 0 && te[e] > tb[e])
      pair_by_signature(out, out.size() - (te[e] - tb[e]), target, golden, g0, g1, taken,
                        entries.how[e]);
    for (uint32_t k = g0; k < g1; ++k) {
      if (!taken[k]) {
        taken[k] = true;
        out.push_back({-1, static_cast<int64_t>(k), MatchKind::kUnmatched});
      }
    }
  }
  for (uint32_t g : entries.golden_only) {
    for (uint32_t k = gb[g]; k < ge[g]; ++k) {
      if (!taken[k]) out.push_back({-1, static_cast<int64_t>(k), MatchKind::kUnmatched});
    }
  }
  return out;
}

}  // namespace numprobe
