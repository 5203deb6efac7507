#include "compare/optimizer_step.h"

#include <unordered_set>
#include <vector>

#include "format/entry_name.h"
#include "numprobe/compare/pair.h"

namespace numprobe {
namespace {

// One side's forward API calls outside every module after its last backward (or parameters_grad)
// entry, in dump order; none when the side has no backward entry (no step to follow).
std::unordered_set<uint32_t> step_calls(const DumpFile& d, const ConstructTable& construct) {
  const std::vector<int64_t> enclosing = enclosing_modules(d, &construct);
  size_t after = d.entries.size();
  for (size_t e = d.entries.size(); e-- > 0;) {
    const Direction dir = parse_entry_name(d.entry_name(e)).direction;
    if (dir == Direction::kBackward || dir == Direction::kParametersGrad) {
      after = e + 1;
      break;
    }
  }
  std::unordered_set<uint32_t> out;
  for (size_t e = after; e < d.entries.size(); ++e) {
    const EntryName n = parse_entry_name(d.entry_name(e));
    if (n.is_module || n.direction != Direction::kForward) continue;
    if (e < enclosing.size() && enclosing[e] >= 0) continue;
    out.insert(static_cast<uint32_t>(e));
  }
  return out;
}

}  // namespace

std::vector<bool> unrecorded_optimizer_step(const PairResult& p) {
  if (!p.target.construct || !p.golden.construct) return {};
  const std::unordered_set<uint32_t> t = step_calls(p.target.dump, *p.target.construct);
  const std::unordered_set<uint32_t> g = step_calls(p.golden.dump, *p.golden.construct);
  if (t.empty() == g.empty()) return {};  // both runs record a step (paired as usual), or neither
  const bool target_side = !t.empty();
  const std::unordered_set<uint32_t>& calls = target_side ? t : g;
  std::vector<bool> mask(p.rows.size(), false);
  bool any = false;
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const RowPair& rp = p.rows[i].pair;
    const int64_t mine = target_side ? rp.target : rp.golden;
    if (mine < 0) continue;
    const CompareRow& row = target_side ? p.target_rows[mine] : p.golden_rows[mine];
    if (!calls.count(row.entry)) continue;
    if ((target_side ? rp.golden : rp.target) >= 0) return {};  // the other run has it after all
    mask[i] = any = true;
  }
  if (!any) return {};
  return mask;
}

size_t unrecorded_optimizer_step_rows(const PairResult& p) {
  size_t rows = 0;
  for (const bool step : unrecorded_optimizer_step(p)) rows += step;
  return rows;
}

}  // namespace numprobe
