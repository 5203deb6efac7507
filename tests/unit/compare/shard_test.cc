// compare --shard (shard.h): the spec, the launcher's environment, the split of ranks, and the
// merge of shard summaries written by compare_plan over a small dump pair.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "numprobe/compare/shard.h"
#include "numprobe/error.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ShardSpec, ParsesKOfNOneBased) {
  const ShardSpec s = parse_shard_spec("3/4");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  for (const char* bad : {"0/4", "5/4", "1/0", "4", "a/b", "1/4x", "-1/4", "/", ""})
    EXPECT_THROW(parse_shard_spec(bad), Error) << bad;
}

TEST(ShardSpec, SlurmArrayWinsAndCountsFromItsMinimumInSteps) {
  auto s = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "12"},
                                          {"SLURM_ARRAY_TASK_COUNT", "4"},
                                          {"SLURM_ARRAY_TASK_MIN", "0"},
                                          {"SLURM_ARRAY_TASK_STEP", "4"},
                                          {"SLURM_ARRAY_JOB_ID", "77"},
                                          {"SLURM_PROCID", "0"},
                                          {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 4);
  EXPECT_EQ(s->count, 4);
  EXPECT_EQ(s->run, "slurm:77");
  // --array=1-4: ids start at 1.
  s = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "1"},
                                     {"SLURM_ARRAY_TASK_COUNT", "4"},
                                     {"SLURM_ARRAY_TASK_MIN", "1"}}));
  EXPECT_EQ(s->index, 1);
  // A sparse array cannot say its shard.
  EXPECT_THROW(shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "9"},
                                              {"SLURM_ARRAY_TASK_COUNT", "3"},
                                              {"SLURM_ARRAY_TASK_MIN", "1"}})),
               Error);
}

TEST(ShardSpec, LaunchersInOrder) {
  auto s = shard_from_environment(env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                          {"OMPI_COMM_WORLD_SIZE", "2"},
                                          {"OMPI_MCA_ess_base_jobid", "99"},
                                          {"RANK", "5"},
                                          {"WORLD_SIZE", "8"}}));
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 2);
  EXPECT_EQ(s->run, "ompi:99");
  s = shard_from_environment(env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "3"}}));
  EXPECT_EQ(s->source, "PMI_RANK/PMI_SIZE");
  s = shard_from_environment(
      env_of({{"RANK", "7"}, {"WORLD_SIZE", "8"}, {"TORCHELASTIC_RUN_ID", "abc"}}));
  EXPECT_EQ(s->index, 8);
  EXPECT_EQ(s->run, "torchelastic:abc");
  EXPECT_FALSE(shard_from_environment(env_of({})));
  EXPECT_THROW(shard_from_environment(env_of({{"RANK", "8"}, {"WORLD_SIZE", "8"}})), Error);
  EXPECT_THROW(shard_from_environment(env_of({{"RANK", "1"}})), Error);
}

TEST(ShardSplit, ContiguousRangesCoverEveryUnitOnce) {
  for (size_t units : {0u, 1u, 3u, 64u, 1000u}) {
    for (int n : {1, 2, 3, 7, 64, 1024}) {
      size_t next = 0;
      for (int k = 1; k <= n; ++k) {
        const auto [b, e] = shard_unit_range(units, k, n);
        EXPECT_EQ(b, next);
        EXPECT_LE(e - b, units / static_cast<size_t>(n) + 1);
        next = e;
      }
      EXPECT_EQ(next, units);
    }
  }
  const std::vector<std::string> u = {"0", "1", "2", "3", "7", ""};
  EXPECT_EQ(describe_units(u, 0, 4), "ranks 0-3");
  EXPECT_EQ(describe_units(u, 3, 5), "ranks 3, 7");
  EXPECT_EQ(describe_units(u, 5, 6), "rank (unnumbered)");
}

// Three ranks over two steps; rank 1 goes wrong at step 0 in an op before the all_reduce.
// One scratch directory per test: ctest -j2 runs tests as parallel processes.
std::string write_pair(const std::string& name) {
  const std::string dir = scratch_dir(name);
  auto leaf = [](double v) {
    return R"({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": )" +
           std::to_string(v) + R"(, "Min": 0.0, "Mean": 0.5, "Norm": 1.0})";
  };
  auto entry = [&](double x, double y) {
    return R"({"input_args": [)" + leaf(x) + R"(], "output": [)" + leaf(y) + "]}";
  };
  for (const char* side : {"t", "g"}) {
    for (int step = 0; step < 2; ++step) {
      for (int rank = 0; rank < 3; ++rank) {
        const bool bad = side[0] == 't' && rank == 1;
        const double y = bad ? 3.0 : 2.0, total = side[0] == 't' ? 7.0 : 6.0;
        const std::string rank_dir =
            dir + "/" + side + "/step" + std::to_string(step) + "/rank" + std::to_string(rank);
        std::filesystem::create_directories(rank_dir);
        write_file(rank_dir + "/dump.json",
                   R"({"task": "statistics", "level": "L1", "framework": "pytorch", "data": {)"
                   R"("Functional.gelu.0.forward": )" +
                       entry(1.0, y) + R"(, "Distributed.all_reduce.0.forward": )" +
                       entry(y, total) + "}}");
      }
    }
  }
  return dir;
}

std::string shard_summary(const ComparePlan& plan, const std::string& dir, int k, int n) {
  ShardInfo info{parse_shard_spec(std::to_string(k) + "/" + std::to_string(n)),
                 dir + "/t",
                 dir + "/g",
                 plan_units(plan),
                 plan.pairs.size(),
                 plan.problems.size(),
                 {}};
  info.pair_index = shard_pairs(plan, info.spec);
  const CompareReport rep = compare_plan(plan, info.pair_index, 1);
  return render_shard_summary_json(rep, info);
}

TEST(ShardMerge, AnyShardingMergesToTheUnshardedSummary) {
  const std::string dir = write_pair("shard_merge_any");
  const std::string whole = render_summary_json(compare_dumps(dir + "/t", dir + "/g", 1));
  const ComparePlan plan = plan_compare(dir + "/t", dir + "/g");
  ASSERT_EQ(plan.pairs.size(), 6u);
  EXPECT_EQ(plan_units(plan), (std::vector<std::string>{"0", "1", "2"}));
  for (int n : {1, 2, 3, 5}) {
    std::vector<ShardSummaryFile> files;
    for (int k = n; k >= 1; --k)
      files.push_back({"shard" + std::to_string(k), shard_summary(plan, dir, k, n)});
    const MergeResult r = merge_shard_summaries(files);
    EXPECT_EQ(r.summary_json, whole) << n << " shards";
    EXPECT_TRUE(r.missing.empty());
    ASSERT_EQ(r.origins.size(), 2u);
    EXPECT_EQ(r.origins[0].rank, 1);
    EXPECT_EQ(r.origins[0].entry, "Functional.gelu.0.forward");
    EXPECT_EQ(r.origins[0].received_by, (std::vector<int64_t>{0, 2}));
  }
}

TEST(ShardMerge, MissingDuplicateAndForeignShards) {
  const std::string dir = write_pair("shard_merge_missing");
  const ComparePlan plan = plan_compare(dir + "/t", dir + "/g");
  const std::string s1 = shard_summary(plan, dir, 1, 3), s3 = shard_summary(plan, dir, 3, 3);
  MergeResult r = merge_shard_summaries({{"a", s1}, {"c", s3}});
  EXPECT_EQ(r.missing, (std::vector<int>{2}));
  ASSERT_EQ(r.missing_ranks.size(), 1u);
  EXPECT_EQ(r.missing_ranks[0], "shard 2/3: rank 1");
  EXPECT_NE(r.summary_json.find("not compared: shard 2/3: rank 1 wrote no summary"),
            std::string::npos);
  EXPECT_EQ(r.pairs, 4u);
  EXPECT_THROW(merge_shard_summaries({{"a", s1}, {"b", s1}}), Error);
  EXPECT_THROW(merge_shard_summaries({{"a", s1}, {"b", shard_summary(plan, dir, 2, 2)}}), Error);
  EXPECT_THROW(merge_shard_summaries({}), Error);
  // The plain summary has no shard block; a truncated one is an InputError naming it.
  const std::string plain = render_summary_json(compare_dumps(dir + "/t", dir + "/g", 1));
  EXPECT_THROW(merge_shard_summaries({{"plain", plain}}), InputError);
  try {
    merge_shard_summaries({{"cut.json", s1.substr(0, s1.size() / 2)}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "cut.json");
  }
}

}  // namespace
