// Rows that differ between frameworks by construction (cross_framework.h).
#include "compare/cross_framework.h"

#include <string_view>

#include "format/entry_name.h"

namespace numprobe {

size_t excuse_one_framework_gradients(PairResult& p) {
  const Framework tf = p.target.dump.framework(), gf = p.golden.dump.framework();
  if (tf == Framework::kUnknown || gf == Framework::kUnknown || tf == gf) return 0;
  size_t n = 0;
  for (RowResult& r : p.rows) {
    if (r.pair.target < 0 || r.pair.golden < 0 || r.excused) continue;
    const CompareRow& t = p.target_rows[r.pair.target];
    const CompareRow& g = p.golden_rows[r.pair.golden];
    const bool one_null = (t.kind == RowKind::kNone) != (g.kind == RowKind::kNone);
    if (!one_null || (t.kind != RowKind::kTensor && g.kind != RowKind::kTensor)) continue;
    if (parse_entry_name(t.name.substr(0, t.suffix_at)).direction != Direction::kBackward) continue;
    std::string_view rest = t.name.substr(t.suffix_at);
    if (!rest.empty() && rest.front() == '.') rest.remove_prefix(1);
    if (rest.rfind("output.", 0) != 0) continue;  // a backward entry's outputs: input gradients
    r.excused = true;
    r.status = RowStatus::kPass;
    r.reason = "gradient_one_framework";
    r.message = "Only one framework returns a gradient for this input (the other returns None).";
    ++n;
  }
  return n;
}

}  // namespace numprobe
