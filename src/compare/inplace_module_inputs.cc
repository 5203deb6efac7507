// In-place operations recorded differently by msprobe and numprobe
// (src/compare/inplace_module_inputs.h).
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api_signature.h"
#include "compare/inplace_module_inputs.h"
#include "compare/noise.h"
#include "format/entry_name.h"

namespace numprobe {
namespace {

bool same_stat(const StatValue& a, const StatValue& b) {
  return a.kind == b.kind && (a.kind == StatKind::kInt ? a.i == b.i : a.v == b.v);
}

// Whether two tensor rows of one dump were recorded from the same contents.
bool same_contents(const CompareRow& a, const CompareRow& b) {
  return a.kind == RowKind::kTensor && b.kind == RowKind::kTensor && a.shape == b.shape &&
         a.dtype == b.dtype && same_stat(a.max, b.max) && same_stat(a.min, b.min) &&
         same_stat(a.mean, b.mean) && same_stat(a.norm, b.norm) && a.md5 == b.md5;
}

std::string_view suffix(const CompareRow& r) {
  std::string_view s = r.name.substr(r.suffix_at);
  if (!s.empty() && s.front() == '.') s.remove_prefix(1);
  return s;
}

// The row "output.<k>" of the entry whose row `at` is "input.<k>", or null. Rows of an entry are
// contiguous.
const CompareRow* matching_output(const RowSet& rows, size_t at) {
  const std::string_view in = suffix(rows[at]);
  if (in.rfind("input.", 0) != 0) return nullptr;
  const std::string_view k = in.substr(6);
  for (size_t j = at + 1; j < rows.size() && rows[j].entry == rows[at].entry; ++j) {
    const std::string_view s = suffix(rows[j]);
    if (s.rfind("output.", 0) == 0 && s.substr(7) == k) return &rows[j];
  }
  return nullptr;
}

void excuse(RowResult& r, const char* reason, const char* message) {
  r.excused = true;
  r.status = RowStatus::kPass;
  r.reason = reason;
  r.message = message;
}

// The rows of each entry of one side, and its entries by name.
struct SideIndex {
  std::vector<size_t> first;  // entry -> first row, rows.size() when it has none
  std::unordered_map<std::string_view, uint32_t> by_name;
  SideIndex(const DumpFile& d, const RowSet& rows) : first(d.entries.size(), rows.size()) {
    for (size_t i = rows.size(); i-- > 0;) first[rows[i].entry] = i;
    for (uint32_t e = 0; e < d.entries.size(); ++e) by_name.emplace(d.entry_name(e), e);
  }
};

// Whether the forward call of API `api` (entry `fwd` of one side) ran in place.
bool ran_in_place(std::string_view api, std::string_view op, const RowSet& rows,
                  const SideIndex& side, const std::string& fwd) {
  if (!op.empty() && (op.back() == '_' || op.rfind("__i", 0) == 0)) return true;
  auto it = side.by_name.find(fwd);
  if (it == side.by_name.end()) return false;
  for (size_t i = side.first[it->second]; i < rows.size() && rows[i].entry == it->second; ++i) {
    const CompareRow& r = rows[i];
    if (r.max.kind != StatKind::kBool || r.max.v != 1.0) continue;
    const std::string_view s = suffix(r);
    if (s == "input.inplace" || other_input_spelling(api, s) == "input.inplace") return true;
  }
  return false;
}

}  // namespace

size_t excuse_inplace_backward_passthrough(PairResult& p) {
  size_t excused = 0;
  std::unique_ptr<SideIndex> t_index, g_index;
  for (size_t i = 0; i < p.rows.size(); ++i) {
    RowResult& r = p.rows[i];
    if (r.pair.target < 0 || r.pair.golden < 0) continue;
    const CompareRow& t_out = p.target_rows[static_cast<size_t>(r.pair.target)];
    const CompareRow& g_out = p.golden_rows[static_cast<size_t>(r.pair.golden)];
    if (t_out.state != RowState::kOutput || t_out.kind != RowKind::kTensor) continue;
    const std::string_view entry = p.target.dump.entry_name(t_out.entry);
    const EntryName e = parse_entry_name(entry);
    if (e.is_module || e.direction != Direction::kBackward || e.index < 0) continue;
    // The entry's input gradient on each side: its row "input.0".
    const CompareRow *t_in = nullptr, *g_in = nullptr;
    for (size_t k = i; k-- > 0;) {
      const RowPair& rp = p.rows[k].pair;
      if (rp.target < 0) continue;  // a golden-only row inside the entry
      const CompareRow& cand = p.target_rows[static_cast<size_t>(rp.target)];
      if (cand.entry != t_out.entry) break;
      if (rp.golden >= 0 && suffix(cand) == "input.0") {
        t_in = &cand;
        g_in = &p.golden_rows[static_cast<size_t>(rp.golden)];
        break;
      }
    }
    if (!t_in) continue;
    const bool t_through = same_contents(*t_in, t_out);
    const bool g_through = same_contents(*g_in, g_out);
    if (t_through == g_through) continue;
    if (!t_index) {
      t_index = std::make_unique<SideIndex>(p.target.dump, p.target_rows);
      g_index = std::make_unique<SideIndex>(p.golden.dump, p.golden_rows);
    }
    const std::string api = std::string(e.prefix) + "." + std::string(e.op);
    const std::string fwd = api + "." + std::to_string(e.index) + ".forward";
    if (!ran_in_place(api, e.op, p.target_rows, *t_index, fwd) &&
        !ran_in_place(api, e.op, p.golden_rows, *g_index, fwd))
      continue;
    excuse(r, "inplace_backward_passthrough",
           "One dump recorded this in-place API's incoming gradient as its output (msprobe on "
           "torch 2.x does): not compared.");
    ++excused;
  }
  return excused;
}

size_t excuse_inplace_module_inputs(PairResult& p) {
  size_t excused = 0;
  for (RowResult& r : p.rows) {
    if (r.pair.target < 0 || r.pair.golden < 0) continue;
    const auto ti = static_cast<size_t>(r.pair.target);
    const auto gi = static_cast<size_t>(r.pair.golden);
    const CompareRow& t_in = p.target_rows[ti];
    const CompareRow& g_in = p.golden_rows[gi];
    if (t_in.state != RowState::kInput || t_in.kind != RowKind::kTensor) continue;
    const std::string_view entry = p.target.dump.entry_name(t_in.entry);
    if (entry.rfind("Module.", 0) != 0 || parse_entry_name(entry).direction != Direction::kForward)
      continue;
    const CompareRow* t_out = matching_output(p.target_rows, ti);
    const CompareRow* g_out = matching_output(p.golden_rows, gi);
    if (!t_out || !g_out) continue;
    const bool t_after = same_contents(t_in, *t_out);
    const bool g_after = same_contents(g_in, *g_out);
    if (t_after == g_after) continue;
    if (row_discrepancy(*t_out, *g_out) > noise_tolerance(t_out->element_type)) continue;
    excuse(r, "inplace_input_after_op",
           "One dump recorded this in-place module's input after the op (msprobe does): not "
           "compared.");
    ++excused;
  }
  return excused;
}

}  // namespace numprobe
