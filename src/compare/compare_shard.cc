// Sharded compare: which shard this process is, which ranks it compares, and the "shard" block of
// its summary.json (docs/scale.md). The merge is shard_merge.cc.
#include <charconv>
#include <set>

#include "compare/summary_writer.h"
#include "numprobe/compare/shard.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

constexpr int64_t kMaxShards = 1000000;

bool parse_int(std::string_view s, int64_t& v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A (rank, size) pair of variables: both set, or neither.
std::optional<ShardSpec> from_pair(const EnvLookup& env, const char* rank_var,
                                   const char* size_var) {
  const char* r = env(rank_var);
  const char* n = env(size_var);
  if (!r && !n) return std::nullopt;
  const std::string vars = std::string(rank_var) + "/" + size_var;
  int64_t rank = 0, size = 0;
  if (!r || !n || !parse_int(r, rank) || !parse_int(n, size))
    throw Error("--shard auto: " + vars + " must both be set to whole numbers");
  if (size < 1 || size > kMaxShards || rank < 0 || rank >= size)
    throw Error("--shard auto: " + vars + " = " + r + "/" + n + " is not a rank within the size");
  ShardSpec s;
  s.index = static_cast<int>(rank + 1);
  s.count = static_cast<int>(size);
  s.source = vars;
  return s;
}

// A Slurm job array: task ids run from MIN in steps of STEP (--array=0-15:4 gives 0,4,8,12).
std::optional<ShardSpec> from_slurm_array(const EnvLookup& env) {
  const char* id = env("SLURM_ARRAY_TASK_ID");
  const char* count = env("SLURM_ARRAY_TASK_COUNT");
  if (!id && !count) return std::nullopt;
  int64_t i = 0, n = 0, min = 0, step = 1;
  const char* min_s = env("SLURM_ARRAY_TASK_MIN");
  const char* step_s = env("SLURM_ARRAY_TASK_STEP");
  if (!id || !count || !parse_int(id, i) || !parse_int(count, n) ||
      (min_s && !parse_int(min_s, min)) || (step_s && !parse_int(step_s, step)) || step < 1)
    throw Error(
        "--shard auto: SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT (and _MIN/_STEP when set) must "
        "be whole numbers");
  const int64_t k = (i - min) / step;
  if (n < 1 || n > kMaxShards || i < min || (i - min) % step != 0 || k >= n)
    throw Error("--shard auto: SLURM_ARRAY_TASK_ID " + std::string(id) +
                " is not one of the array's " + count +
                " task ids (a sparse array such as "
                "--array=1,5,9 cannot say its shard: give --shard K/N)");
  ShardSpec s;
  s.index = static_cast<int>(k + 1);
  s.count = static_cast<int>(n);
  s.source = "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT";
  return s;
}

std::string run_tag(const EnvLookup& env) {
  const std::pair<const char*, const char*> ids[] = {
      {"SLURM_ARRAY_JOB_ID", "slurm:"},         {"SLURM_JOB_ID", "slurm:"},
      {"OMPI_MCA_ess_base_jobid", "ompi:"},     {"PMIX_NAMESPACE", "pmix:"},
      {"TORCHELASTIC_RUN_ID", "torchelastic:"},
  };
  for (const auto& [var, prefix] : ids) {
    const char* v = env(var);
    if (v && *v) return prefix + std::string(v);
  }
  return "";
}

}  // namespace

ShardSpec parse_shard_spec(std::string_view text) {
  const size_t slash = text.find('/');
  int64_t k = 0, n = 0;
  if (slash == std::string_view::npos || !parse_int(text.substr(0, slash), k) ||
      !parse_int(text.substr(slash + 1), n) || n < 1 || n > kMaxShards || k < 1 || k > n) {
    throw Error("--shard: '" + std::string(text) +
                "' is not K/N with 1 <= K <= N (or 'auto' to read the launcher's environment)");
  }
  ShardSpec s;
  s.index = static_cast<int>(k);
  s.count = static_cast<int>(n);
  s.source = "--shard";
  return s;
}

std::optional<ShardSpec> shard_from_environment(const EnvLookup& env) {
  std::optional<ShardSpec> s = from_slurm_array(env);
  if (!s) s = from_pair(env, "SLURM_PROCID", "SLURM_NTASKS");
  if (!s) s = from_pair(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  if (!s) s = from_pair(env, "PMI_RANK", "PMI_SIZE");
  if (!s) s = from_pair(env, "RANK", "WORLD_SIZE");
  if (s) s->run = run_tag(env);
  return s;
}

std::string shard_dir_name(int index, int count) {
  return "shard-" + std::to_string(index) + "-of-" + std::to_string(count);
}

std::vector<std::string> plan_units(const ComparePlan& plan) {
  std::vector<std::string> units;
  std::set<std::string> seen;
  for (const auto& pr : plan.pairs) {
    std::string u = rank_unit(pr.first);
    if (seen.insert(u).second) units.push_back(std::move(u));
  }
  return units;
}

std::pair<size_t, size_t> shard_unit_range(size_t units, int index, int count) {
  const auto k = static_cast<size_t>(index), n = static_cast<size_t>(count);
  return {(k - 1) * units / n, k * units / n};
}

std::vector<size_t> shard_pairs(const ComparePlan& plan, const ShardSpec& spec) {
  const std::vector<std::string> units = plan_units(plan);
  const auto [begin, end] = shard_unit_range(units.size(), spec.index, spec.count);
  const std::set<std::string> mine(units.begin() + static_cast<ptrdiff_t>(begin),
                                   units.begin() + static_cast<ptrdiff_t>(end));
  std::vector<size_t> out;
  for (size_t i = 0; i < plan.pairs.size(); ++i)
    if (mine.count(rank_unit(plan.pairs[i].first))) out.push_back(i);
  return out;
}

std::string render_shard_summary_json(const CompareReport& rep, const ShardInfo& info) {
  if (info.pair_index.size() != rep.pairs.size())
    throw Error("shard summary: one plan index per compared pair is needed");
  std::vector<PairDivergence> divergences;
  divergences.reserve(rep.pairs.size());
  for (const PairResult& p : rep.pairs) divergences.push_back(pair_divergence(p, true));
  auto shard_block = [&](base::JsonWriter& w) {
    w.key("shard");
    w.begin_object();
    w.key("format");
    w.int_value(1);
    w.key("index");
    w.int_value(info.spec.index);
    w.key("count");
    w.int_value(info.spec.count);
    w.key("source");
    w.string_value(info.spec.source);
    w.key("run");
    w.string_value(info.spec.run);
    w.key("target");
    w.string_value(info.target);
    w.key("golden");
    w.string_value(info.golden);
    w.key("pairs_total");
    w.int_value(static_cast<int64_t>(info.pairs_total));
    w.key("plan_problems");
    w.int_value(static_cast<int64_t>(info.plan_problems));
    w.key("units");
    w.begin_array();
    for (const std::string& u : info.units) w.string_value(u);
    w.end_array();
    w.key("pairs");
    w.begin_array();
    for (size_t i = 0; i < rep.pairs.size(); ++i) {
      w.begin_object();
      w.key("index");
      w.int_value(static_cast<int64_t>(info.pair_index[i]));
      w.key("collectives_before");
      w.int_value(static_cast<int64_t>(divergences[i].collectives_before));
      w.key("problems");
      w.begin_array();
      for (const std::string& problem : pair_problems(rep.pairs[i])) w.string_value(problem);
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.end_object();
  };
  return render_report_summary(rep, divergences, shard_block);
}

}  // namespace numprobe
