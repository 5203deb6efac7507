#include "numprobe/dump_tree.h"

#include <gtest/gtest.h>

#include "format/dump_summary.h"
#include "numprobe/error.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::msprobe_fixture;

TEST(DumpTree, FindsStepsAndRanksFromTheRoot) {
  auto ranks = find_rank_dumps(msprobe_fixture("quick_start_resnet50_gpu_mix_statistics"));
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].step, 0);
  EXPECT_EQ(ranks[1].step, 1);
  EXPECT_EQ(ranks[0].rank_label, "proc2016");
  EXPECT_EQ(ranks[0].rank, -1);
  auto multi = find_rank_dumps(msprobe_fixture("visualization_multi_step_rank"));
  ASSERT_EQ(multi.size(), 4u);  // step0: rank0, rank1; step1: rank0; step2: rank0
  EXPECT_EQ(multi[0].step, 0);
  EXPECT_EQ(multi[0].rank, 0);
  EXPECT_EQ(multi[1].rank, 1);
  EXPECT_EQ(multi[2].step, 1);
  EXPECT_EQ(multi[3].step, 2);
  // A step dir, a rank dir and a file name the same dump.
  auto step = find_rank_dumps(msprobe_fixture("visualization_multi_step_rank/step0"));
  EXPECT_EQ(step.size(), 2u);
  auto rank = find_rank_dumps(msprobe_fixture("visualization_multi_step_rank/step0/rank1"));
  ASSERT_EQ(rank.size(), 1u);
  EXPECT_EQ(rank[0].step, 0);
  EXPECT_EQ(rank[0].rank, 1);
  auto file =
      find_rank_dumps(msprobe_fixture("visualization_multi_step_rank/step0/rank1/dump.json"));
  ASSERT_EQ(file.size(), 1u);
  EXPECT_EQ(file[0].rank, 1);
}

TEST(DumpTree, MissingPathsAreClearErrors) {
  EXPECT_THROW(find_rank_dumps("/nonexistent/dump"), InputError);
  try {
    find_rank_dumps(msprobe_fixture("configs"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no dump found"), std::string::npos);
  }
}

TEST(DumpSummary, ResNetCounts) {
  auto ranks = find_rank_dumps(msprobe_fixture("quick_start_resnet50_gpu_mix_statistics/step0"));
  RankDump d = load_rank_dump(ranks.at(0));
  RankSummary s = summarize_rank(d);
  EXPECT_EQ(s.entries, 760u);
  EXPECT_EQ(s.forward + s.backward + s.parameters_grad, 760u);
  EXPECT_EQ(s.parameters_grad, 107u);  // 161 weight/bias rows in msprobe's compare
  EXPECT_EQ(s.unnamed, 0u);
  EXPECT_EQ(s.task, "statistics");
  EXPECT_EQ(s.level, "mix");
  EXPECT_EQ(s.stack_entries, 410u);  // forward entries carry stacks
  EXPECT_GT(s.construct_nodes, 0u);
  EXPECT_TRUE(s.problems.empty()) << s.problems.front();
}

TEST(DumpSummary, TensorModeChecksDataFiles) {
  auto ranks = find_rank_dumps(msprobe_fixture("synthetic_edge_cases/tensor/npu"));
  RankDump d = load_rank_dump(ranks.at(0));
  RankSummary s = summarize_rank(d);
  EXPECT_EQ(s.framework, "mindspore");
  EXPECT_GT(s.tensors_with_data, 0u);
  EXPECT_EQ(s.data_files_missing, 0u);
  EXPECT_GT(s.nonfinite_tensors, 0u);
}

// Regression (review): "rank0/" (trailing slash) lost its rank and step.
TEST(DumpTree, TrailingSlashKeepsRankAndStep) {
  auto r = find_rank_dumps(msprobe_fixture("visualization_multi_step_rank/step0/rank1") + "/");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, 0);
  EXPECT_EQ(r[0].rank, 1);
  EXPECT_EQ(r[0].rank_label, "rank1");
}
