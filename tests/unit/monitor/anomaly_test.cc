#include <gtest/gtest.h>

#include <cmath>

#include "base/file_util.h"
#include "monitor/anomaly_rules.h"
#include "numprobe/error.h"
#include "numprobe/monitor/anomaly.h"
#include "test_support.h"

namespace numprobe::monitor {
namespace {

TEST(AnomalyRules, EmaSequence) {
  // First value: avg = |x|; each check returns the average before the value, then
  // avg <- 0.99 avg + 0.01 |x|. Threshold 0 makes every value above the history trip, so the
  // returned history can be read at each step.
  AnomalyDetector d({{"AnomalyTurbulence", 0}});
  const double xs[] = {-4.0, 2.0, 10.0, 1e6};
  double avg = 4.0;
  std::vector<double> seen;
  for (double x : xs) {
    const auto hit = d.check("t", "norm", x);
    if (hit) seen.push_back(hit->history);
    if (x == 10.0 || x == 1e6) {
      ASSERT_TRUE(hit) << x;
      EXPECT_DOUBLE_EQ(hit->history, avg);
    } else {
      EXPECT_FALSE(hit) << x;
    }
    avg = 0.99 * avg + (1 - 0.99) * std::fabs(x);
  }
  EXPECT_EQ(seen.size(), 2u);
  // Per (tag, op): another op starts its own average, so a first value never trips.
  EXPECT_FALSE(d.check("t", "mean", 1e6));
}

TEST(AnomalyRules, TurbulenceIsUpwardOnlyAndNormMeanOnly) {
  AnomalyDetector d({{"AnomalyTurbulence", 0.5}});
  EXPECT_FALSE(d.check("t", "norm", 1.0));   // sets avg
  EXPECT_FALSE(d.check("t", "norm", 1.5));   // 1.5 > 1.5 is false
  EXPECT_FALSE(d.check("t", "norm", -0.1));  // a drop never trips
  EXPECT_TRUE(d.check("t", "norm", -3.0));   // |x| is compared
  EXPECT_FALSE(d.check("t", "max", 1.0));
  EXPECT_FALSE(d.check("t", "max", 100.0));  // trips but is not reported for max
}

TEST(AnomalyRules, FirstMatchingRuleWins) {
  AnomalyDetector d({{"AnomalyTurbulence", 0.5}, {"AnomalyNan", 10}});
  d.check("t", "max", 1);
  // max 100: Turbulence matches first and is dropped for max, so AnomalyNan never reports it.
  EXPECT_FALSE(d.check("t", "max", 100));
  d.check("t", "norm", 1);
  const auto hit = d.check("t", "norm", 100);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->rule, "AnomalyTurbulence");
  AnomalyDetector n({{"AnomalyNan", INFINITY}});
  EXPECT_FALSE(n.check("t", "max", 1e300));
  const auto nan_hit = n.check("t", "max", NAN);
  ASSERT_TRUE(nan_hit);
  EXPECT_EQ(anomaly_message(*nan_hit, "0:a/rank0/actv", "max", 3, NAN),
            "Rule AnomalyNan reports anomaly signal in ('0:a/rank0/actv', 'max') at step 3, "
            "current value nan, history mean 1e+300.");
}

AnomalyRecord rec(int64_t rank, int64_t step, int64_t micro, const std::string& task, int64_t vpp,
                  int64_t pp, int64_t call) {
  AnomalyRecord r;
  r.rank = rank;
  r.step = step;
  r.micro_step = micro;
  r.vpp_stage = vpp;
  r.pp_stage = pp;
  r.call_id = call;
  r.tag_name = std::to_string(vpp) + ":x/rank" + std::to_string(rank) + "/" + task;
  r.group_mates = {rank};
  return r;
}

TEST(AnomalyAnalyse, MsprobeOrderThenRank) {
  std::vector<AnomalyRecord> rs = {
      rec(1, 2, 0, "actv", 0, 0, 0),       // later step
      rec(3, 1, 0, "post_grad", 0, 0, 1),  // backward: larger pp first
      rec(2, 1, 0, "post_grad", 0, 1, 1),
      rec(5, 1, 0, "actv", 1, 0, 9),  // forward: smaller vpp first
      rec(4, 1, 0, "actv", 0, 0, 9),
      rec(7, 1, 0, "exp_avg", 0, 0, 0),  // optimizer stage after backward
      rec(6, 1, 1, "actv", 0, 0, 0),     // later micro step
      rec(9, 1, 0, "actv", 0, 0, 9),     // tie with rank 4: rank decides
  };
  const auto top = top_anomalies(rs, 100, {});
  std::vector<int64_t> ranks;
  for (const auto& r : top) ranks.push_back(r.rank);
  EXPECT_EQ(ranks, (std::vector<int64_t>{4, 9, 5, 2, 3, 7, 6, 1}));
  EXPECT_EQ(top_anomalies(rs, 2, {}).size(), 2u);
  const auto step2 = top_anomalies(rs, 8, {2});
  ASSERT_EQ(step2.size(), 1u);
  EXPECT_EQ(step2[0].rank, 1);
}

// numprobe's one change to msprobe's order: a step's param_updated rows (the update's result) and
// rows of the group other (optimizer-time metrics, collectives carrying another rank's values)
// come after its forward and backward, param_origin (the weights the forward read) before them.
TEST(AnomalyAnalyse, UpdatedParametersAndOtherRowsAfterTheStepsForward) {
  std::vector<AnomalyRecord> rs = {
      rec(1, 3, 0, "param_updated", 0, 0, 0), rec(2, 3, 0, "other", 0, 0, 1),
      rec(3, 3, 0, "actv", 0, 0, 5),          rec(4, 3, 0, "param_origin", 0, 0, 9),
      rec(5, 3, 0, "exp_avg", 0, 0, 2),
  };
  EXPECT_EQ(train_stage("0:x/rank0/param_updated"), 3);
  EXPECT_EQ(train_stage("cc:all_reduce.0.post_0/rank0/other"), 2);
  EXPECT_EQ(train_stage("0:x/rank0/param_origin"), -1);
  std::vector<int64_t> ranks;
  for (const auto& r : top_anomalies(rs, 100, {})) ranks.push_back(r.rank);
  EXPECT_EQ(ranks, (std::vector<int64_t>{4, 3, 2, 5, 1}));
}

TEST(AnomalyAnalyse, JsonRoundTripAndFiles) {
  const std::string base = testing::scratch_dir("monitor_analyse");
  std::vector<AnomalyRecord> a = {rec(0, 3, 0, "actv", 0, 0, 2)};
  a[0].message = "m \"q\" \xe4\xb8\xad";
  for (const char* r : {"rank0", "rank1", "rank2"})
    base::make_dirs(base + "/anomaly_detected/" + r);
  testing::write_file(base + "/anomaly_detected/rank0/anomaly.json", anomaly_json(a));
  testing::write_file(base + "/anomaly_detected/rank1/anomaly.json",
                      anomaly_json({rec(1, 1, 0, "actv", 0, 0, 0)}));
  const std::string one = anomaly_json(a);
  EXPECT_NE(one.find("\"0:x/rank0/actv_step_3_call_2\": {\n  \"rank\": 0,"), std::string::npos);
  EXPECT_NE(one.find("\\u4e2d"), std::string::npos);  // ensure_ascii
  for (const std::string& dir : {base, base + "/anomaly_detected"}) {
    const AnomalyFiles f = load_anomaly_files(dir);
    EXPECT_EQ(f.files.size(), 2u);
    ASSERT_EQ(f.records.size(), 2u);
    EXPECT_EQ(f.records[0].message, a[0].message);
  }
  const std::string out =
      write_anomaly_analyse(top_anomalies(load_anomaly_files(base).records, 8, {}), base + "/out");
  const auto back = parse_anomaly_json(testing::read_file(out), out);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].step, 1);  // regression: keys were read back sorted, not in file order

  testing::write_file(base + "/anomaly_detected/rank2/anomaly.json", "{\"k\": [1]}");
  try {
    load_anomaly_files(base);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rank2/anomaly.json"), std::string::npos);
  }
  EXPECT_TRUE(load_anomaly_files(testing::scratch_dir("monitor_analyse_empty")).files.empty());
  EXPECT_EQ(parse_step_list("[1, 2]"), (std::vector<int64_t>{1, 2}));
  EXPECT_THROW(parse_step_list("1"), InputError);
}

// Regression: an integer beyond int64 was read as a wrapped value (rank 18446744073709551615 became
// -1); it is an error naming the field and where it is.
TEST(AnomalyAnalyse, IntegersBeyondInt64AreErrors) {
  try {
    parse_anomaly_json(R"({"k": {"rank": 18446744073709551615}})", "a.json");
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("a.json (byte 15)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'rank'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_step_list("[18446744073709551615]"), InputError);
  EXPECT_THROW(parse_anomaly_json(R"({"k": {"step": 1.5}})", "a.json"), InputError);
}

}  // namespace
}  // namespace numprobe::monitor
