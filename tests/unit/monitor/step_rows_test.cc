#include "monitor/step_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "numprobe/monitor/sink.h"
#include "test_support.h"

namespace numprobe::monitor {
namespace {

MetricRow named(const std::string& name, double norm) {
  MetricRow r;
  r.name = name;
  r.summary.norm = norm;
  return r;
}

TEST(StepRows, SummariesOfStatsScalarsAndNothing) {
  TensorStats st;
  st.count = 4;
  st.min = -2;
  st.max = 3;
  st.sum = 2;
  st.sumsq = 16;
  st.nan_count = 1;
  st.pos_inf_count = 1;
  st.neg_inf_count = 2;
  const TensorSummary s = stats_summary(st, 0.25);
  EXPECT_EQ(s.min, -2);
  EXPECT_EQ(s.max, 3);
  EXPECT_DOUBLE_EQ(s.mean, 0.5);
  EXPECT_DOUBLE_EQ(s.norm, 4);
  EXPECT_EQ(s.nans, 1);
  EXPECT_EQ(s.infs, 3);
  EXPECT_EQ(s.zeros, 0.25);

  const TensorSummary v = scalar_summary(-0.5, 1e-8);
  EXPECT_EQ(v.min, -0.5);
  EXPECT_EQ(v.mean, -0.5);
  EXPECT_EQ(v.norm, 0.5);
  EXPECT_EQ(v.zeros, 0);
  EXPECT_EQ(scalar_summary(1e-9, 1e-8).zeros, 1);
  EXPECT_EQ(scalar_summary(NAN, 1e-8).nans, 1);

  const TensorSummary n = nan_summary();
  for (const char* op : {"min", "max", "mean", "norm", "zeros", "nans", "infs"})
    EXPECT_TRUE(std::isnan(op_value(n, op))) << op;
}

TEST(StepRows, GroupsInMsprobesOrderRowsInCallOrder) {
  // Rows arrive in hook order (a parameter hook before the activations of a later cell): the
  // step's files are written per group in step_final_hook's order, each group in call order.
  const std::string base = testing::scratch_dir("monitor_step_rows");
  MonitorConfig c;
  c.ops = {"norm"};
  MetricSink sink(base, 0, c);
  std::vector<std::pair<MetricGroup, MetricRow>> rows = {
      {MetricGroup::kGradUnreduced, named("0:b.weight", 1)},
      {MetricGroup::kActv, named("0:a.output:0", 2)},
      {MetricGroup::kGradUnreduced, named("0:a.weight", 3)},
      {MetricGroup::kActv, named("0:b.output:0", 4)},
  };
  rows[1].second.micro_step = rows[3].second.micro_step = 0;
  EXPECT_TRUE(write_step_rows(sink, 5, rows).empty());
  sink.close();
  EXPECT_EQ(testing::read_file(sink.run_dir() + "/grad_unreduced_5-5.csv"),
            "vpp_stage,name,step,norm\n"
            "0,b.weight,5,1.0\n"
            "0,a.weight,5,3.0\n");
  EXPECT_EQ(testing::read_file(sink.run_dir() + "/actv_5-5.csv"),
            "vpp_stage,name,step,micro_step,norm\n"
            "0,a.output,5,0,2.0\n"
            "0,b.output,5,0,4.0\n");
}

}  // namespace
}  // namespace numprobe::monitor
