// Orchestration of a compare: rank pairing, mode detection, per-row verdicts, first divergence.
#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <thread>

#include <cmath>

#include "base/worker_pool.h"
#include "compare/cross_framework.h"
#include "compare/inplace_module_inputs.h"
#include "compare/judgement.h"
#include "format/entry_name.h"
#include "format/tensor_file.h"
#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/compare/shard.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

// msprobe's "Accuracy Reached or Not" = No thresholds (reference/msprobe.md 2.4).
constexpr double kCosOk = 0.99, kCosMin = 0.9, kAbsOk = 0.001, kAbsMax = 1.0;

// (step, rank id); dumps without a rank id ("rank", "proc{pid}": pids differ between runs) pair by
// their order within the step.
std::vector<std::string> rank_keys(const std::vector<RankLocation>& locs) {
  std::map<int64_t, int> unnamed;
  std::vector<std::string> keys;
  for (const auto& l : locs) {
    std::string k = std::to_string(l.step) + "/";
    k += l.rank >= 0 ? std::to_string(l.rank) : "#" + std::to_string(unnamed[l.step]++);
    keys.push_back(k);
  }
  return keys;
}

bool has_md5(const DumpFile& d) {
  for (const TensorLeaf& t : d.tensors) {
    if (t.md5 != kNoString) return true;
  }
  return false;
}

CompareMode detect_mode(const DumpFile& t, const DumpFile& g) {
  bool t_md5 = has_md5(t), g_md5 = has_md5(g);
  if (t_md5 != g_md5) {
    throw InputError(t.path, std::string("one dump has md5 summaries and the other has not (") +
                                 g.path + "): compare needs the same summary_mode on both sides");
  }
  if (t_md5) return CompareMode::kMd5;
  if (t.task() == "tensor" && g.task() == "tensor") return CompareMode::kTensor;
  return CompareMode::kStatistics;
}

// A worse status replaces a better one; at equal status the first reason stays.
void set(RowResult& r, RowStatus s, const char* reason, const std::string& message = "") {
  if (static_cast<int>(s) > static_cast<int>(r.status) || (s == r.status && r.reason.empty())) {
    r.status = s;
    r.reason = reason;
  }
  if (!message.empty()) r.message += message + " ";
}

TensorFile load_tensor(const RankLocation& where, const CompareRow& r) {
  return TensorFile::open(where.dir + "/dump_tensor_data/" + std::string(r.data_name),
                          r.element_type);
}

void judge_tensor_data(PairResult& p, RowResult& r, const CompareRow& t, const CompareRow& g) {
  if (t.data_name.empty() || g.data_name.empty()) {
    set(r, RowStatus::kWarning, "no_data_file", "NPU or bench has no data file.");
    return;
  }
  try {
    const TensorFile a = load_tensor(p.target_where, t);
    const TensorFile b = load_tensor(p.golden_where, g);
    r.tensor = tensor_metrics(a.data(), a.dtype(), a.count(), b.data(), b.dtype(), b.count(),
                              g.element_type, t.shape.empty());
  } catch (const Error& e) {  // unreadable file, or a dtype neither file nor dump.json names
    set(r, RowStatus::kError, "data_unreadable",
        std::string(e.what()) + " (" + std::string(t.data_name) + " / " + std::string(g.data_name) +
            ")");
    return;
  }
  const TensorMetrics& m = r.tensor;
  switch (m.reason) {
    case TensorVerdictReason::kNanInfMismatch:
      set(r, RowStatus::kError, "nan_inf_mismatch",
          "The position of inf or nan in NPU and bench Tensor do not match.");
      return;
    case TensorVerdictReason::kShapeMismatch:
      set(r, RowStatus::kError, "data_size_mismatch",
          "The data files hold different element counts although dump.json shapes agree.");
      return;
    case TensorVerdictReason::kEmpty:
      set(r, RowStatus::kPass, "empty", "This is empty data, can not compare.");
      return;
    default:
      break;
  }
  if (m.cosine_zero_side) {
    set(r, RowStatus::kError, "one_side_all_zero",
        "Cannot compare by Cosine Similarity, one side is all zero.");
    return;
  }
  const bool bad =
      (m.has_cosine && ((m.cosine < kCosOk && m.max_abs > kAbsOk) || m.cosine < kCosMin)) ||
      m.max_abs > kAbsMax;
  set(r, bad ? RowStatus::kError : RowStatus::kPass, bad ? "accuracy_thresholds" : "");
}

void judge(PairResult& p, RowResult& r) {
  const RowPair& rp = r.pair;
  if (rp.target < 0) {
    set(r, RowStatus::kUnmatched, "golden_only", "Only in the golden dump.");
    return;
  }
  if (rp.golden < 0) {
    set(r, RowStatus::kUnmatched, "no_golden_row", "No bench data matched.");
    return;
  }
  const CompareRow& t = p.target_rows[rp.target];
  const CompareRow& g = p.golden_rows[rp.golden];
  r.status = RowStatus::kPass;
  if (t.kind != g.kind) {
    set(r, RowStatus::kError, "kind_mismatch", "Different kinds of value.");
    return;
  }
  if (t.kind == RowKind::kScalar || t.kind == RowKind::kOther) {
    if (t.md5 != g.md5 || t.dtype != g.dtype)
      set(r, RowStatus::kError, "value_mismatch", "Values differ.");
    return;
  }
  if (t.kind != RowKind::kTensor) return;
  if (t.shape != g.shape) {
    set(r, RowStatus::kError, "shape_mismatch", "Shape of NPU and bench tensor do not match.");
    return;
  }
  switch (p.mode) {
    case CompareMode::kMd5:
      if (t.md5 != g.md5) set(r, RowStatus::kError, "md5_different", "CRC-32 differs.");
      break;
    case CompareMode::kStatistics: {
      const StatisticsMetrics stats = statistics_metrics(t, g);
      if (stats.reason == "nan_inf_mismatch") {
        set(r, RowStatus::kError, "nan_inf_mismatch", "NaN/Inf statistics differ.");
      } else if (stats.warning) {
        set(r, RowStatus::kWarning, "stats_magnitude", "Need double check api accuracy.");
      }
      break;
    }
    case CompareMode::kTensor:
      judge_tensor_data(p, r, t, g);
      break;
  }
  // Cross-framework dumps spell dtypes differently ("Float32", "torch.float32"): compare the
  // element types where both are known.
  const bool same_dtype = t.element_type != DType::kUnknown && g.element_type != DType::kUnknown
                              ? t.element_type == g.element_type
                              : t.dtype == g.dtype;
  if (rp.dtype_checked && !same_dtype)
    set(r, RowStatus::kWarning, "dtype_mismatch", "Dtype of NPU and bench tensor do not match.");
  if (t.requires_grad != g.requires_grad) {
    set(r, RowStatus::kWarning, "requires_grad_mismatch", "Requires_grad inconsistent.");
  }
}

}  // namespace

StatisticsMetrics row_statistics(const PairResult& p, const RowResult& r) {
  if (r.pair.target < 0 || r.pair.golden < 0) return {};
  const CompareRow& t = p.target_rows[static_cast<size_t>(r.pair.target)];
  const CompareRow& g = p.golden_rows[static_cast<size_t>(r.pair.golden)];
  if (t.kind != RowKind::kTensor || g.kind != RowKind::kTensor) return {};
  return statistics_metrics(t, g);
}

const char* compare_mode_name(CompareMode m) {
  switch (m) {
    case CompareMode::kTensor:
      return "tensor";
    case CompareMode::kStatistics:
      return "statistics";
    case CompareMode::kMd5:
      return "md5";
  }
  return "?";
}

const char* row_status_name(RowStatus s) {
  switch (s) {
    case RowStatus::kPass:
      return "pass";
    case RowStatus::kWarning:
      return "warning";
    case RowStatus::kError:
      return "error";
    case RowStatus::kUnmatched:
      return "unmatched";
  }
  return "?";
}

void compare_pair(PairResult& p, const CompareMappings* mappings, unsigned threads) {
  p.mode = detect_mode(p.target.dump, p.golden.dump);
  // Only the mapping plan reads entry bodies once rows exist. Without mappings each side frees
  // them as soon as its rows exist, and the sides are flattened one after the other, so the two
  // models and the two row sets never coexist: that bounds a large compare's peak memory.
  p.target_rows = flatten_rows(p.target.dump);
  if (!mappings) p.target.dump.release_values();
  p.golden_rows = flatten_rows(p.golden.dump);
  if (!mappings) p.golden.dump.release_values();
  MappingPlan plan;
  if (mappings) {
    plan = plan_mappings(*mappings, p.target, p.golden, p.target_rows, p.golden_rows,
                         &p.generated_mappings);
    p.target.dump.release_values();
    p.golden.dump.release_values();
  }
  const MappingPlan* pl = plan.empty() ? nullptr : &plan;
  p.mapped = pl != nullptr;
  // Both sides with a module tree: API entries pair inside their module instances (pair.h).
  EntryScopes scopes;
  if (p.target.construct && p.golden.construct) {
    scopes.target = enclosing_modules(p.target.dump, &*p.target.construct);
    scopes.golden = enclosing_modules(p.golden.dump, &*p.golden.construct);
  }
  p.entries = pair_entries(p.target.dump, p.golden.dump, p.target_rows, p.golden_rows, pl,
                           scopes.empty() ? nullptr : &scopes);
  std::vector<RowPair> pairs = pair_rows(p.entries, p.target_rows, p.golden_rows, pl);
  p.rows.clear();
  p.rows.resize(pairs.size());
  // Rows are judged independently (tensor mode reads two files per row): chunks run in parallel.
  constexpr size_t kChunk = 4096;
  parallel_for((pairs.size() + kChunk - 1) / kChunk, threads, [&](size_t c) {
    for (size_t i = c * kChunk; i < std::min(pairs.size(), (c + 1) * kChunk); ++i) {
      RowResult& r = p.rows[i];
      r.pair = pairs[i];
      judge(p, r);
      if (!r.message.empty()) r.message.pop_back();
    }
  });
  excuse_inplace_module_inputs(p);
  excuse_inplace_backward_passthrough(p);
  excuse_one_framework_gradients(p);
  for (const RowResult& r : p.rows) {
    const RowPair& rp = r.pair;
    switch (r.status) {
      case RowStatus::kPass:
        ++p.pass;
        break;
      case RowStatus::kWarning:
        ++p.warning;
        break;
      case RowStatus::kError:
        ++p.error;
        break;
      case RowStatus::kUnmatched:
        break;
    }
    if (rp.target >= 0 && rp.golden >= 0) ++p.matched;
    if (rp.golden < 0) ++p.unmatched_target;
    if (rp.target < 0) ++p.unmatched_golden;
  }
  judge_divergence(p);
}

namespace {

// Collectives (Distributed.* entries) the target ran before its first divergence.
size_t collectives_before(const PairResult& p) {
  size_t n = 0;
  for (size_t e = 0; e < p.target.dump.entries.size(); ++e) {
    std::string_view name = p.target.dump.entry_name(e);
    if (name == p.first_divergence->entry) break;
    if (name.rfind("Distributed.", 0) == 0) ++n;
  }
  return n;
}

// A step that follows one where the runs already differed starts with parameters (and optimizer
// state) that carry that difference: it is judged without the bit-identical assumption.
// Invariant relied on by sharding (shard.h): only pairs of the same rank unit are chained.
void chain_steps(CompareReport& report) {
  std::map<std::string, std::vector<PairResult*>> by_rank;
  for (PairResult& p : report.pairs) by_rank[rank_unit(p.target_where)].push_back(&p);
  for (auto& [rank, pairs] : by_rank) {
    std::stable_sort(pairs.begin(), pairs.end(), [](const PairResult* a, const PairResult* b) {
      return a->target_where.step < b->target_where.step;
    });
    // A first dumped step after step 0 (msprobe's `step: [N]`, a start() at the step where the
    // loss went wrong): the steps before it were not dumped, so how far the runs' parameters and
    // optimizer state had already drifted is unknown. Its parameters may differ by any amount; its
    // ops are judged by what they do to their inputs (issue 30).
    if (!pairs.empty() && pairs.front()->target_where.step > 0 &&
        pairs.front()->golden_where.step > 0)
      judge_divergence(*pairs.front(), std::numeric_limits<double>::infinity());
    // Every later step knows its predecessor: the drift it carried, or that it agreed bit for bit
    // (then this step's parameters are the same bits too, whatever CPU each run used).
    for (size_t i = 1; i < pairs.size(); ++i)
      judge_divergence(*pairs[i], carried_discrepancy(*pairs[i - 1]), pairs[i - 1]);
  }
}

}  // namespace

PairDivergence pair_divergence(const PairResult& p, bool count_collectives) {
  PairDivergence d;
  d.step = p.target_where.step;
  d.rank = p.target_where.rank;
  if (!p.first_divergence) return d;
  d.diverged = true;
  d.entry = p.first_divergence->entry;
  d.reason = p.first_divergence->reason;
  if (count_collectives) d.collectives_before = collectives_before(p);
  return d;
}

std::vector<CrossRankOrigin> order_cross_rank_origins(const std::vector<PairDivergence>& pairs) {
  std::vector<CrossRankOrigin> origins;
  std::map<int64_t, std::vector<size_t>> by_step;
  for (size_t i = 0; i < pairs.size(); ++i)
    if (pairs[i].diverged) by_step[pairs[i].step].push_back(i);
  for (const auto& [step, idx] : by_step) {
    CrossRankOrigin o;
    o.step = step;
    for (size_t i : idx) {
      const PairDivergence& p = pairs[i];
      if (p.entry.rfind("Distributed.", 0) == 0) {
        o.received.push_back(static_cast<int64_t>(i));
        continue;
      }
      const bool better = o.pair < 0 || p.collectives_before < o.collectives_before ||
                          (p.collectives_before == o.collectives_before &&
                           p.rank < pairs[static_cast<size_t>(o.pair)].rank);
      if (better) {
        o.pair = static_cast<int64_t>(i);
        o.collectives_before = p.collectives_before;
      }
    }
    if (o.pair < 0) {
      // Diverged in a collective on every rank while its inputs agreed: the communication op.
      for (int64_t i : o.received) {
        if (o.pair < 0 ||
            pairs[static_cast<size_t>(i)].rank < pairs[static_cast<size_t>(o.pair)].rank)
          o.pair = i;
      }
      o.collective_itself = true;
      o.collectives_before = pairs[static_cast<size_t>(o.pair)].collectives_before;
    }
    origins.push_back(std::move(o));
  }
  return origins;
}

void judge_first_steps(CompareReport& report, PriorSteps prior) {
  std::map<std::string, PairResult*> first;
  for (PairResult& p : report.pairs) {
    PairResult*& f = first[rank_unit(p.target_where)];
    if (!f || p.target_where.step < f->target_where.step) f = &p;
  }
  for (auto& [rank, p] : first) {
    if (p->target_where.step <= 0 || p->golden_where.step <= 0) continue;
    if (prior == PriorSteps::kBitwise)
      judge_divergence(*p, 0, nullptr, true);
    else
      judge_divergence(*p, std::numeric_limits<double>::infinity());
  }
  find_cross_rank_origins(report);
}

void find_cross_rank_origins(CompareReport& report) {
  std::vector<PairDivergence> pairs;
  pairs.reserve(report.pairs.size());
  for (const PairResult& p : report.pairs) pairs.push_back(pair_divergence(p, true));
  report.origins = order_cross_rank_origins(pairs);
}

std::string rank_unit(const RankLocation& l) {
  return l.rank >= 0 ? std::to_string(l.rank) : std::string();
}

ComparePlan plan_compare(const std::string& target, const std::string& golden) {
  std::vector<RankLocation> t = find_rank_dumps(target), g = find_rank_dumps(golden);
  ComparePlan plan;
  if (t.size() == 1 && g.size() == 1) {
    plan.pairs.emplace_back(t[0], g[0]);
    return plan;
  }
  std::map<std::string, RankLocation> golden_by_key;
  const auto gk = rank_keys(g), tk = rank_keys(t);
  for (size_t i = 0; i < g.size(); ++i) golden_by_key.emplace(gk[i], g[i]);
  for (size_t i = 0; i < t.size(); ++i) {
    const RankLocation& l = t[i];
    auto it = golden_by_key.find(tk[i]);
    if (it == golden_by_key.end()) {
      plan.problems.push_back("only in target: " + l.dir);
      continue;
    }
    plan.pairs.emplace_back(l, it->second);
    golden_by_key.erase(it);
  }
  for (const auto& [k, l] : golden_by_key) plan.problems.push_back("only in golden: " + l.dir);
  return plan;
}

std::vector<std::string> pair_problems(const PairResult& p) {
  // A side file that exists but cannot be read (a truncated stack.json, say) leaves its columns
  // N/A: the report says why. A missing one is normal (construct.json at L1) and is not listed.
  std::vector<std::string> out;
  for (const auto* side : {&p.target, &p.golden}) {
    for (const std::string& problem : side->problems) {
      if (problem.size() < 8 || problem.compare(problem.size() - 8, 8, " missing") != 0)
        out.push_back((side == &p.target ? "target: " : "golden: ") + problem);
    }
  }
  return out;
}

CompareReport compare_plan(const ComparePlan& plan, const std::vector<size_t>& which,
                           unsigned threads, const CompareMappings* mappings) {
  CompareReport report;
  report.problems = plan.problems;
  std::vector<const std::pair<RankLocation, RankLocation>*> todo;
  for (size_t i : which) {
    if (i >= plan.pairs.size()) throw Error("compare: pair index out of the plan's range");
    todo.push_back(&plan.pairs[i]);
  }
  // Pairs are independent: each worker loads and compares whole pairs. An exception in a worker
  // is rethrown here (the first one, in pair order).
  report.pairs.resize(todo.size());
  std::vector<std::exception_ptr> errors(todo.size());
  std::atomic<size_t> next{0};
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t n_workers = std::min<size_t>(threads, todo.size());
  // Threads left over when there are fewer pairs than threads work inside each pair, when the
  // pair is large enough to repay starting them (a 1 MB pair compares in ~25 ms on one thread).
  const auto spare = static_cast<unsigned>(n_workers == 0 ? 1 : threads / n_workers);
  auto threads_for = [&](size_t i) -> unsigned {
    constexpr uintmax_t kWorthThreads = uintmax_t{16} << 20;
    std::error_code ec;
    uintmax_t bytes = 0;
    for (const RankLocation* l : {&todo[i]->first, &todo[i]->second}) {
      const uintmax_t b = std::filesystem::file_size(l->dump_json, ec);
      if (!ec) bytes += b;
    }
    return bytes >= kWorthThreads ? spare : 1;
  };
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      try {
        const unsigned per_pair = threads_for(i);
        PairResult& p = report.pairs[i];
        p.target_where = todo[i]->first;
        p.golden_where = todo[i]->second;
        parallel_for(2, per_pair, [&](size_t side) {
          if (side == 0) {
            p.target = load_rank_dump(todo[i]->first);
          } else {
            p.golden = load_rank_dump(todo[i]->second);
          }
        });
        compare_pair(p, mappings, per_pair);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  parallel_for(n_workers, static_cast<unsigned>(n_workers), [&](size_t) { work(); });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (const PairResult& p : report.pairs) {
    for (std::string& problem : pair_problems(p)) report.problems.push_back(std::move(problem));
  }
  chain_steps(report);
  find_cross_rank_origins(report);
  return report;
}

CompareReport compare_dumps(const std::string& target, const std::string& golden, unsigned threads,
                            const CompareMappings* mappings) {
  const ComparePlan plan = plan_compare(target, golden);
  std::vector<size_t> all(plan.pairs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return compare_plan(plan, all, threads, mappings);
}

}  // namespace numprobe
