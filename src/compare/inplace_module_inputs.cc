// In-place module inputs recorded after the op (include/numprobe/compare_inplace.h).
#include <string_view>

#include "numprobe/compare_inplace.h"
#include "numprobe/compare_noise.h"
#include "numprobe/entry_name.h"

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

}  // namespace

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
    r.excused = true;
    r.status = RowStatus::kPass;
    r.reason = "inplace_input_after_op";
    r.message =
        "One dump recorded this in-place module's input after the op (msprobe does): not compared.";
    ++excused;
  }
  return excused;
}

}  // namespace numprobe
