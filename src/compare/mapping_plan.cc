// From user mappings to the pairings they fix (compare/pair.h MappingPlan).
#include <unordered_map>
#include <unordered_set>

#include "compare/mapping_ms_pt_primitives.h"
#include "format/entry_name.h"
#include "numprobe/compare/mapping.h"

namespace numprobe {
namespace {

template <typename Name>
std::unordered_map<std::string_view, uint32_t> index_by_name(size_t n, Name name) {
  std::unordered_map<std::string_view, uint32_t> m;
  for (uint32_t i = 0; i < n; ++i) m.emplace(name(i), i);
  return m;
}

// "Cell.{path}.{Class}..." -> "Module.{mapped path}.{Class}...": the cell mapping's exact
// "{path}.{Class}" first, else each key replaced where it occurs (msprobe's fallback).
std::string cell_to_module(std::string_view name, const NamePairs& cells) {
  const EntryName e = parse_entry_name(name);
  if (!e.is_module || e.prefix != "Cell") return "";
  std::string op(e.op);
  bool exact = false;
  for (const auto& [from, to] : cells) {
    if (op == from) {
      op = to;
      exact = true;
      break;
    }
  }
  if (!exact) {
    for (const auto& [from, to] : cells) {
      const size_t at = op.find(from);
      if (at != std::string::npos) op.replace(at, from.size(), to);
    }
  }
  const size_t op_end = e.prefix.size() + 1 + e.op.size();
  return "Module." + op + std::string(name.substr(op_end));
}

// "Prefix.api" of an API entry, "" for modules and other names.
std::string api_of(std::string_view name) {
  const EntryName e = parse_entry_name(name);
  if (e.is_module || e.index < 0 || e.direction == Direction::kUnknown) return "";
  return std::string(e.prefix) + "." + std::string(e.op);
}

const std::vector<std::string>* side_list(const ApiArgMapping& m, std::string_view label, bool ms) {
  if (label == "input") return ms ? &m.ms_args : &m.pt_args;
  if (label == "output") return ms ? &m.ms_outputs : &m.pt_outputs;
  if (label == "parameters") return ms ? &m.ms_parameters : &m.pt_parameters;
  return nullptr;
}

// MindSpore's normalisation cells name their parameters as the paper does, PyTorch's modules
// weight/bias/running_*: a Cell row ending in one of these pairs with the Module row ending in
// the other when the golden dump has no row of the MindSpore spelling.
constexpr std::pair<std::string_view, std::string_view> kCellParamNames[] = {
    {"gamma", "weight"},
    {"beta", "bias"},
    {"moving_mean", "running_mean"},
    {"moving_variance", "running_var"},
};

// "input" and "1" of a row "<entry>.input.1", "" where the name has fewer parts.
std::pair<std::string_view, std::string_view> row_label_and_arg(const CompareRow& row) {
  std::string_view rest = std::string_view(row.name).substr(row.suffix_at);
  if (!rest.empty() && rest[0] == '.') rest.remove_prefix(1);
  const size_t dot = rest.find('.');
  return {rest.substr(0, dot), dot == std::string_view::npos ? "" : rest.substr(dot + 1)};
}

}  // namespace

MappingPlan plan_mappings(const CompareMappings& m, const RankDump& target, const RankDump& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows,
                          GeneratedMappings* generated) {
  MappingPlan plan;
  if (!m.any()) return plan;
  const DumpFile& t = target.dump;
  const DumpFile& g = golden.dump;
  plan.entry.assign(t.entries.size(), MappingPlan::kOpen);
  plan.renamed.assign(t.entries.size(), "");
  plan.row.assign(target_rows.size(), MappingPlan::kOpen);
  plan.row_dtype_unchecked.assign(target_rows.size(), false);
  const auto g_entry = index_by_name(g.entries.size(), [&](uint32_t i) { return g.entry_name(i); });
  const auto t_entry = index_by_name(t.entries.size(), [&](uint32_t i) { return t.entry_name(i); });
  const auto g_row = index_by_name(
      golden_rows.size(), [&](uint32_t i) { return std::string_view(golden_rows[i].name); });
  const auto t_row = index_by_name(
      target_rows.size(), [&](uint32_t i) { return std::string_view(target_rows[i].name); });

  if (m.layer) {
    GeneratedMappings gen;
    gen.api = layer_mapping_entries(target, golden, m.layers);
    gen.data = data_mapping_of(gen.api, t, g, target_rows, golden_rows);
    for (const auto& [tn, gn] : gen.api) {
      auto ti = t_entry.find(tn);
      if (ti == t_entry.end()) continue;
      auto gi = g_entry.find(gn);
      plan.entry[ti->second] = gi == g_entry.end() ? int64_t{-1} : int64_t{gi->second};
    }
    plan.row_dtype_unchecked.assign(target_rows.size(), true);
    if (generated) *generated = std::move(gen);
    return plan;
  }

  std::unordered_set<std::string> golden_apis;
  if (!m.apis.empty()) {
    for (size_t i = 0; i < g.entries.size(); ++i) golden_apis.insert(api_of(g.entry_name(i)));
  }
  // Rows of each target entry (contiguous, entry order).
  std::vector<std::pair<uint32_t, uint32_t>> rows_of(t.entries.size(), {0, 0});
  for (uint32_t r = 0; r < target_rows.size(); ++r) {
    auto& span = rows_of[target_rows[r].entry];
    if (span.second == 0) span.first = r;
    span.second = r + 1;
  }

  for (size_t i = 0; i < t.entries.size() && (m.api || m.cell); ++i) {
    const std::string_view name = t.entry_name(i);
    std::string to;
    const ApiArgMapping* user = nullptr;
    const PrimitiveMapping* primitive = nullptr;
    const std::string api = m.api ? api_of(name) : "";
    if (!api.empty()) {
      for (const ApiArgMapping& a : m.apis) {
        if (a.ms_api == api && golden_apis.count(a.pt_api)) user = &a;
      }
      if (user) {
        to = user->pt_api + std::string(name.substr(api.size()));
      } else if ((primitive = builtin_primitive_mapping(api))) {
        to = std::string(primitive->pt_api) + std::string(name.substr(api.size()));
      } else if (std::string pt = builtin_pt_api(api); !pt.empty()) {
        to = pt + std::string(name.substr(api.size()));
      }
    }
    if (to.empty() && m.cell) to = cell_to_module(name, m.cells);
    if (to.empty()) continue;
    plan.renamed[i] = to;
    auto gi = g_entry.find(to);
    if (gi != g_entry.end()) plan.entry[i] = gi->second;
    const bool cell = name.substr(0, 5) == "Cell.";
    if ((primitive && !primitive->forward_inputs.empty()) || cell) {
      // Rows whose name differs by more than the entry's: a primitive's forward inputs, a
      // normalisation cell's parameters. The others pair by suffix.
      const bool forward = parse_entry_name(name).direction == Direction::kForward;
      for (uint32_t r = rows_of[i].first; r < rows_of[i].second; ++r) {
        const CompareRow& row = target_rows[r];
        std::string golden_row;
        if (primitive && forward) {
          const auto [label, arg] = row_label_and_arg(row);
          for (const auto& [ms, pt] : primitive->forward_inputs) {
            if (label == "input" && arg == std::to_string(ms))
              golden_row = to + ".input." + std::to_string(pt);
          }
        } else if (cell) {
          const std::string_view row_name(row.name);
          const std::string_view leaf = row_name.substr(row_name.rfind('.') + 1);
          const std::string own = to + std::string(row_name.substr(row.suffix_at));
          for (const auto& [ms, pt] : kCellParamNames) {
            if (leaf == ms && !g_row.count(own))
              golden_row = own.substr(0, own.size() - ms.size()) + std::string(pt);
          }
        }
        if (golden_row.empty()) continue;
        auto gr = g_row.find(golden_row);
        plan.row[r] = gr == g_row.end() ? int64_t{-1} : int64_t{gr->second};
      }
    }
    if (!user) continue;
    // The user's argument lists decide every row of the call; rows they omit stay unpaired.
    for (uint32_t r = rows_of[i].first; r < rows_of[i].second; ++r) {
      const auto [label, arg] = row_label_and_arg(target_rows[r]);
      plan.row[r] = -1;
      const auto* ms = side_list(*user, label, true);
      const auto* pt = side_list(*user, label, false);
      for (size_t k = 0; ms && k < ms->size(); ++k) {
        if ((*ms)[k] != arg) continue;
        auto gr = g_row.find(to + "." + std::string(label) + "." + (*pt)[k]);
        if (gr != g_row.end()) plan.row[r] = gr->second;
        break;
      }
    }
  }

  if (!m.data.empty()) {
    for (const auto& [tn, gn] : m.data) {
      auto tr = t_row.find(tn);
      if (tr == t_row.end()) continue;
      auto gr = g_row.find(gn);
      plan.row[tr->second] = gr == g_row.end() ? int64_t{-1} : int64_t{gr->second};
      plan.row_dtype_unchecked[tr->second] = true;
    }
    // An entry whose rows the data mapping all names pairs with the golden entry of its first
    // mapped row (or with none); partly named entries keep their own name, as in msprobe.
    for (size_t i = 0; i < t.entries.size(); ++i) {
      const auto [b, e] = rows_of[i];
      if (b == e || plan.entry[i] != MappingPlan::kOpen) continue;
      bool all = true;
      int64_t first = -1;
      for (uint32_t r = b; r < e; ++r) {
        all &= static_cast<bool>(plan.row_dtype_unchecked[r]);
        if (first < 0 && plan.row[r] >= 0) first = golden_rows[plan.row[r]].entry;
      }
      if (all) plan.entry[i] = first;
    }
  }
  return plan;
}

}  // namespace numprobe
