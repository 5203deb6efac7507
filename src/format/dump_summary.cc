#include "format/dump_summary.h"

#include <cmath>
#include <unordered_map>

#include "base/file_util.h"
#include "format/entry_name.h"

namespace numprobe {
namespace {

bool nonfinite(const StatValue& s) {
  return s.kind == StatKind::kFloat && !std::isfinite(s.v);
}

// Visits every tensor leaf in an entry's subtree.
template <typename F>
void for_each_tensor(const DumpFile& d, uint32_t node, F&& f) {
  const uint32_t end = node + d.nodes[node].span;
  for (uint32_t i = node; i < end; ++i) {
    if (d.nodes[i].kind == NodeKind::kTensor) f(d.tensors[d.nodes[i].tensor]);
  }
}

}  // namespace

RankSummary summarize_rank(const RankDump& rd, bool check_data_files) {
  const DumpFile& d = rd.dump;
  RankSummary s;
  s.where = rd.where;
  s.framework = std::string(d.framework_name());
  if (s.framework.empty()) {
    Framework f = d.framework();
    s.framework = f == Framework::kPyTorch     ? "pytorch (inferred)"
                  : f == Framework::kMindSpore ? "mindspore (inferred)"
                                               : "unknown";
  }
  s.task = std::string(d.task());
  s.level = std::string(d.level());
  s.entries = d.entries.size();
  s.recovered_from_journal = rd.recovered_from_journal;
  s.problems = rd.problems;

  std::unordered_map<std::string_view, size_t> prefix_index;
  uint64_t unparsed_examples = 0;
  for (size_t i = 0; i < d.entries.size(); ++i) {
    std::string_view name = d.entry_name(i);
    EntryName en = parse_entry_name(name);
    std::string_view prefix = en.prefix.empty() ? std::string_view("(debug)") : en.prefix;
    auto [it, fresh] = prefix_index.emplace(prefix, s.prefixes.size());
    if (fresh) s.prefixes.push_back(PrefixCount{std::string(prefix)});
    PrefixCount& pc = s.prefixes[it->second];
    switch (en.direction) {
      case Direction::kForward:
        ++s.forward;
        ++pc.forward;
        break;
      case Direction::kBackward:
        ++s.backward;
        ++pc.backward;
        break;
      case Direction::kParametersGrad:
        ++s.parameters_grad;
        ++pc.parameters_grad;
        break;
      case Direction::kDebug:
        ++s.debug;
        ++pc.other;
        break;
      case Direction::kUnknown:
        ++s.unnamed;
        ++pc.other;
        if (unparsed_examples++ == 0) {
          s.problems.push_back("entry name not in msprobe's naming scheme: " + std::string(name));
        }
        break;
    }
    for_each_tensor(d, d.entries[i].node, [&](const TensorLeaf& t) {
      ++s.tensors;
      if (t.md5 != kNoString) ++s.tensors_with_md5;
      if (t.dtype == DType::kUnknown) ++s.unknown_dtypes;
      if (nonfinite(t.max) || nonfinite(t.min) || nonfinite(t.mean) || nonfinite(t.norm)) {
        if (s.nonfinite_tensors++ == 0) s.first_nonfinite_entry = std::string(name);
      }
      if (t.data_name != kNoString) {
        ++s.tensors_with_data;
        if (check_data_files && !base::file_exists(rd.where.dir + "/dump_tensor_data/" +
                                                   std::string(d.str(t.data_name)))) {
          ++s.data_files_missing;
        }
      }
    });
  }
  if (unparsed_examples > 1) {
    s.problems.push_back(std::to_string(unparsed_examples) +
                         " entry names outside the naming scheme");
  }
  if (s.data_files_missing > 0) {
    s.problems.push_back(std::to_string(s.data_files_missing) + " of " +
                         std::to_string(s.tensors_with_data) +
                         " tensor data files missing under dump_tensor_data/");
  }
  if (s.unknown_dtypes > 0) {
    s.problems.push_back(std::to_string(s.unknown_dtypes) + " tensors with an unrecognised dtype");
  }
  if (rd.stack) {
    s.stack_entries = rd.stack->entry_count();
  }
  if (rd.construct) s.construct_nodes = rd.construct->edges.size();
  if (d.task().empty()) s.problems.push_back("dump.json has no \"task\" field");
  return s;
}

}  // namespace numprobe
