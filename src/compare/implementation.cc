#include "implementation.h"

#include <algorithm>
#include <iterator>

#include "compare/pair_scope.h"
#include "format/entry_name.h"
#include "numprobe/compare/mapping.h"

namespace numprobe {
namespace {

// What a call did, beyond its name: per row its direction, kind, shape and dtype.
std::vector<std::string> call_rows(const std::vector<CompareRow>& rows,
                                   const std::vector<uint32_t>& first, uint32_t entry) {
  std::vector<std::string> out;
  for (uint32_t i = first[entry]; i < rows.size() && rows[i].entry == entry; ++i) {
    const CompareRow& r = rows[i];
    std::string sig(1, r.state == RowState::kOutput ? 'o' : 'i');
    sig += static_cast<char>('0' + static_cast<int>(r.kind));
    for (int64_t d : r.shape) {
      sig += std::to_string(d);
      sig += ',';
    }
    sig += dtype_name(r.element_type);
    out.push_back(std::move(sig));
  }
  return out;
}

// Each side calls an op the other does not (sdpa against matmul + softmax, sqrt + div against
// rsqrt + mul): not merely calls added to or left out of the same sequence.
bool replaced(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> x = a, y = b;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  std::vector<std::string> only_a, only_b;
  std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(only_a));
  std::set_difference(y.begin(), y.end(), x.begin(), x.end(), std::back_inserter(only_b));
  return !only_a.empty() && !only_b.empty();
}

bool one_call_swapped(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  size_t differ = 0;
  for (size_t k = 0; k < a.size(); ++k) differ += a[k] != b[k];
  return differ <= 1;
}

// The first row of each entry (rows are contiguous per entry); rows.size() for none.
std::vector<uint32_t> first_rows(const std::vector<CompareRow>& rows, size_t entries) {
  std::vector<uint32_t> first(entries, static_cast<uint32_t>(rows.size()));
  for (uint32_t i = rows.size(); i-- > 0;)
    if (rows[i].entry < entries) first[rows[i].entry] = i;
  return first;
}

// The floating dtypes the calls hold tensors in (a bit per dtype).
uint64_t float_dtypes(const std::vector<CompareRow>& rows, const std::vector<uint32_t>& first,
                      const std::vector<uint32_t>& entries) {
  uint64_t bits = 0;
  for (uint32_t e : entries)
    for (uint32_t i = first[e]; i < rows.size() && rows[i].entry == e; ++i)
      if (rows[i].kind == RowKind::kTensor && dtype_is_floating(rows[i].element_type))
        bits |= uint64_t{1} << (static_cast<unsigned>(rows[i].element_type) & 63);
  return bits;
}

// A MindSpore call as the PyTorch API -am's built-in table names it (Mint.transpose ->
// Torch.transpose, Tensor.astype -> Tensor.to), so that a MindSpore module calling the PyTorch
// module's APIs under their MindSpore names is not taken for another implementation.
std::string as_torch_call(const std::string& key) {
  const size_t dir = key.rfind('.');
  if (dir == std::string::npos) return key;
  const std::string pt = builtin_pt_api(std::string_view(key).substr(0, dir));
  return pt.empty() ? key : pt + key.substr(dir);
}

}  // namespace

std::vector<ImplementationRegion> implementation_regions(const PairResult& p) {
  std::vector<ImplementationRegion> out;
  if (!p.target.construct || !p.golden.construct) return out;
  const DumpFile& td = p.target.dump;
  const DumpFile& gd = p.golden.dump;
  const std::vector<int64_t> ts = enclosing_modules(td, &*p.target.construct);
  const std::vector<int64_t> gs = enclosing_modules(gd, &*p.golden.construct);
  // Direct API calls per module entry, in execution order.
  std::unordered_map<int64_t, std::vector<uint32_t>> t_calls, g_calls;
  for (uint32_t i = 0; i < ts.size(); ++i)
    if (ts[i] >= 0 && !parse_entry_name(td.entry_name(i)).is_module) t_calls[ts[i]].push_back(i);
  for (uint32_t i = 0; i < gs.size(); ++i)
    if (gs[i] >= 0 && !parse_entry_name(gd.entry_name(i)).is_module) g_calls[gs[i]].push_back(i);
  const std::vector<uint32_t> tf = first_rows(p.target_rows, td.entries.size());
  const std::vector<uint32_t> gf = first_rows(p.golden_rows, gd.entries.size());
  const bool ms_target =
      td.framework() == Framework::kMindSpore && gd.framework() != Framework::kMindSpore;
  const bool ms_golden =
      gd.framework() == Framework::kMindSpore && td.framework() != Framework::kMindSpore;
  for (uint32_t m = 0; m < p.entries.golden_of.size() && m < td.entries.size(); ++m) {
    const int64_t g = p.entries.golden_of[m];
    if (g < 0 || !parse_entry_name(td.entry_name(m)).is_module) continue;
    ImplementationRegion r;
    r.module = m;
    r.golden_module = static_cast<uint32_t>(g);
    if (auto it = t_calls.find(m); it != t_calls.end()) r.target_entries = it->second;
    if (auto it = g_calls.find(g); it != g_calls.end()) r.golden_entries = it->second;
    for (uint32_t e : r.target_entries) r.target_calls.push_back(op_key(td.entry_name(e)));
    for (uint32_t e : r.golden_entries) r.golden_calls.push_back(op_key(gd.entry_name(e)));
    // Across frameworks the calls are compared under PyTorch's names (reported as dumped).
    std::vector<std::string> tc = r.target_calls, gc = r.golden_calls;
    if (ms_target) std::transform(tc.begin(), tc.end(), tc.begin(), as_torch_call);
    if (ms_golden) std::transform(gc.begin(), gc.end(), gc.begin(), as_torch_call);
    if (tc == gc) {
      // The same calls: a module whose calls take their arguments in another order (`w * y`
      // against `y * w`: the gradients come out in another order) is another implementation;
      // other arguments (a bias left out) are a finding of the call.
      bool reordered = false, other_arguments = false;
      for (size_t k = 0; k < r.target_entries.size(); ++k) {
        std::vector<std::string> a = call_rows(p.target_rows, tf, r.target_entries[k]);
        std::vector<std::string> b = call_rows(p.golden_rows, gf, r.golden_entries[k]);
        if (a == b) continue;
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        (a == b ? reordered : other_arguments) = true;
      }
      if (!reordered || other_arguments) continue;
    } else if (one_call_swapped(tc, gc)) {
      // One call for another in the same sequence (another activation): a change of that call,
      // judged as one, where its arguments and outputs name it.
      continue;
    } else if (!replaced(tc, gc)) {
      // Calls only added or left out (a dropout left active, a residual add dropped, casts, a
      // mask one attention needs): judged call by call, where a structure finding names them.
      continue;
    }
    const uint64_t tdt = float_dtypes(p.target_rows, tf, r.target_entries);
    const uint64_t gdt = float_dtypes(p.golden_rows, gf, r.golden_entries);
    if (tdt != 0 && gdt != 0 && tdt != gdt) continue;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace numprobe
