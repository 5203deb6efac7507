// A compare split by rank over the processes a cluster's launcher starts (a Slurm job array,
// mpirun/srun, torchrun workers), then one small merge (docs/scale.md).
//
// Invariant: the unit of a shard is a rank with all its steps. A step's judgement takes the
// previous step's drift of the same rank (compare_run.cc, chain_steps), so splitting a rank's steps
// across shards would change verdicts; splitting ranks changes nothing but which process works.
// Each shard writes the summary.json of its own pairs plus a "shard" block; merging the shards'
// summaries gives the summary.json one unsharded compare writes, byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numprobe/compare.h"

namespace numprobe {

// Shard `index` of `count`, 1-based as written on the command line ("--shard 3/4").
struct ShardSpec {
  int index = 1;
  int count = 1;
  std::string source;  // "--shard" or the environment variables it was read from
  // The launcher's job id when it gives one (SLURM_ARRAY_JOB_ID, SLURM_JOB_ID, Open MPI's jobid,
  // PMIX_NAMESPACE, TORCHELASTIC_RUN_ID); "" otherwise. Lets a merging shard tell this run's
  // partial summaries from an earlier run's.
  std::string run;
};

// "K/N" with 1 <= K <= N <= 1,000,000; throws Error naming the text otherwise.
ShardSpec parse_shard_spec(std::string_view text);
// The launcher's environment, first match wins: SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT
// (offset by SLURM_ARRAY_TASK_MIN), SLURM_PROCID / SLURM_NTASKS, OMPI_COMM_WORLD_RANK / _SIZE,
// PMI_RANK / PMI_SIZE, RANK / WORLD_SIZE. nullopt when none is set; throws Error for a set pair
// that does not make a shard (a rank outside the size, text that is not a number).
using EnvLookup = std::function<const char*(const char*)>;
std::optional<ShardSpec> shard_from_environment(const EnvLookup& env);
// "shard-K-of-N": the directory a shard writes under -o.
std::string shard_dir_name(int index, int count);

// What a compare will do before it loads anything: the (target, golden) rank dumps paired by
// (step, rank), in the order summary.json lists them, and the steps/ranks present on one side.
struct ComparePlan {
  std::vector<std::pair<RankLocation, RankLocation>> pairs;
  std::vector<std::string> problems;
};
ComparePlan plan_compare(const std::string& target, const std::string& golden);
// A pair's rank unit: the rank id as text, "" for dumps without one (all of those form one unit).
std::string rank_unit(const RankLocation& l);
// The plan's rank units in order of first appearance.
std::vector<std::string> plan_units(const ComparePlan& plan);
// The units [first, second) of shard `index` of `count` (contiguous, sizes differing by at most
// one).
std::pair<size_t, size_t> shard_unit_range(size_t units, int index, int count);
// "ranks 16-23", "rank 5", "ranks 3, 9, 12": units [begin, end) for messages.
std::string describe_units(const std::vector<std::string>& units, size_t begin, size_t end);
// Indices into plan.pairs of the shard's pairs, ascending.
std::vector<size_t> shard_pairs(const ComparePlan& plan, const ShardSpec& spec);
// compare_dumps over the plan's pairs `which` (ascending indices): problems are the plan's, then
// each compared pair's (pair_problems), in pair order.
CompareReport compare_plan(const ComparePlan& plan, const std::vector<size_t>& which,
                           unsigned threads = 0, const CompareMappings* mappings = nullptr);
// Side files of a pair that exist but could not be read.
std::vector<std::string> pair_problems(const PairResult& p);

// What the cross-rank ordering reads of one pair (find_cross_rank_origins): a partial summary
// carries exactly this, so that the merge orders ranks that different processes compared.
struct PairDivergence {
  int64_t step = -1, rank = -1;
  bool diverged = false;
  std::string entry, reason;  // of the first divergence
  size_t collectives_before = 0;
};
PairDivergence pair_divergence(const PairResult& p, bool count_collectives);
// CrossRankOrigin::pair and ::received index `pairs`.
std::vector<CrossRankOrigin> order_cross_rank_origins(const std::vector<PairDivergence>& pairs);

// A shard's place in the whole compare, written as summary.json's "shard" block.
struct ShardInfo {
  ShardSpec spec;
  std::string target, golden;      // -t / -g as given (every shard must be given the same)
  std::vector<std::string> units;  // plan_units of the whole plan
  size_t pairs_total = 0;          // plan.pairs.size()
  size_t plan_problems = 0;        // the leading entries of report.problems that are the plan's
  std::vector<size_t> pair_index;  // plan index of each report pair
};
std::string render_shard_summary_json(const CompareReport& rep, const ShardInfo& info);

// The merge of shards' summary.json files (in any order, each with its path for messages).
struct ShardSummaryFile {
  std::string path;
  std::string text;
};
struct MergedOrigin {
  int64_t step = -1, rank = -1;
  std::string entry, reason;
  size_t collectives_before = 0;
  std::vector<int64_t> received_by;  // ranks
};
struct MergeResult {
  std::string summary_json;  // what an unsharded compare writes, plus problems for missing shards
  int count = 0;             // N
  std::vector<int> present;  // shard indices read
  std::vector<int> missing;  // shard indices absent: their ranks were not compared
  std::vector<std::string> missing_ranks;  // per missing shard: "shard 3/4: ranks 16-23"
  size_t pairs = 0, pairs_total = 0;
  Coverage coverage = Coverage::kNothingCompared;
  std::vector<MergedOrigin> origins;
  // Pairs with a first divergence: (step, rank, entry, reason), in summary order.
  std::vector<PairDivergence> divergences;
};
// A shard summary's index, count and run tag (a merging shard waits for its run's shards).
// Throws InputError as merge_shard_summaries does.
ShardSpec read_shard_spec(const ShardSummaryFile& file);
// Throws InputError naming the file for a file that is not a shard's summary, and Error for
// shards that do not belong to one compare (other -t/-g, shard count, ranks) or a shard given
// twice.
MergeResult merge_shard_summaries(const std::vector<ShardSummaryFile>& files);

}  // namespace numprobe
