// Cross-framework compares with user mappings against what msprobe's own compare wrote for the
// same MindSpore (target) / PyTorch (golden) pair: golden_compare_outputs_mstt/xf_ms_vs_pt_*.
// Same NPU Name / Bench Name pairs, and the same statistics and differences within 1e-9, except
// where msprobe is wrong by numprobe's rules, each named below.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/compare/stats_metrics.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::CsvTable;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_csv;
using numprobe::testing::read_file;

namespace {

const char* kPair = "cross_framework_ms_vs_pt";

PairResult run(const CompareMappings& m) {
  PairResult p;
  p.target = load_rank_dump(
      find_rank_dumps(msprobe_fixture(std::string(kPair) + "/mindspore_data")).at(0));
  p.golden =
      load_rank_dump(find_rank_dumps(msprobe_fixture(std::string(kPair) + "/pytorch_data")).at(0));
  compare_pair(p, &m);
  return p;
}

bool numeric(std::string s, double& v) {
  while (!s.empty() && (s.back() == '\t' || s.back() == ' ' || s.back() == '%')) s.pop_back();
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool close(double a, double b) {
  if (a == b) return true;
  // msprobe subtracts statistics rounded to about 15 significant digits
  // (stats_golden_test.cc): a difference of nearly equal values keeps ~2e-15 absolute slack.
  return std::fabs(a - b) <= 1e-9 * std::fmax(std::fabs(a), std::fabs(b)) ||
         std::fabs(a - b) < 2e-15;
}

struct Checked {
  size_t golden_rows = 0, paired = 0, values = 0;
};

// Our view of one row pair, by msprobe's column names.
using Excuse = std::function<std::string(const CompareRow& t, const CompareRow* g, MatchKind how,
                                         const std::string& reason)>;

// Every row of msprobe's table: our row of the same NPU name pairs with the same bench row
// (`excuse` may explain a difference), and every number msprobe printed for a pair (statistics,
// their differences and relative errors) equals ours.
Checked check_against_msprobe(const PairResult& p, const std::string& golden_csv,
                              const Excuse& excuse) {
  const CsvTable want = read_csv(msprobe_fixture(golden_csv));
  std::map<std::string, const RowResult*> ours;
  for (const RowResult& r : p.rows) {
    if (r.pair.target >= 0) ours.emplace(p.target_rows[r.pair.target].name, &r);
  }
  Checked c;
  const size_t w_npu = want.column("NPU Name"), w_bench = want.column("Bench Name");
  for (const auto& w : want.rows) {
    ++c.golden_rows;
    auto it = ours.find(w[w_npu]);
    EXPECT_NE(it, ours.end()) << "no row for " << w[w_npu];
    if (it == ours.end()) continue;
    const RowResult& r = *it->second;
    const CompareRow& t = p.target_rows[r.pair.target];
    const CompareRow* g = r.pair.golden >= 0 ? &p.golden_rows[r.pair.golden] : nullptr;
    const std::string ours_bench = g ? std::string(g->name) : "N/A";
    if (ours_bench != w[w_bench]) {
      EXPECT_FALSE(excuse(t, g, r.pair.how, std::string(r.reason)).empty())
          << w[w_npu] << ": msprobe pairs it with " << w[w_bench] << ", numprobe with "
          << ours_bench;
      continue;
    }
    if (!g) continue;
    ++c.paired;
    const StatisticsMetrics m = statistics_metrics(t, *g);
    const struct {
      const char* column;
      bool has;
      double v;
    } values[] = {
        {"Max diff", m.max.has_diff, m.max.diff},
        {"Min diff", m.min.has_diff, m.min.diff},
        {"Mean diff", m.mean.has_diff, m.mean.diff},
        {"L2norm diff", m.norm.has_diff, m.norm.diff},
        {"MaxRelativeErr", m.max.has_rel, m.max.rel_percent},
        {"MinRelativeErr", m.min.has_rel, m.min.rel_percent},
        {"MeanRelativeErr", m.mean.has_rel, m.mean.rel_percent},
        {"NormRelativeErr", m.norm.has_rel, m.norm.rel_percent},
        {"NPU max", t.max.has_number(), t.max.v},
        {"NPU min", t.min.has_number(), t.min.v},
        {"NPU mean", t.mean.has_number(), t.mean.v},
        {"NPU l2norm", t.norm.has_number(), t.norm.v},
        {"Bench max", g->max.has_number(), g->max.v},
        {"Bench min", g->min.has_number(), g->min.v},
        {"Bench mean", g->mean.has_number(), g->mean.v},
        {"Bench l2norm", g->norm.has_number(), g->norm.v},
    };
    for (const auto& v : values) {
      double want_v = 0;
      if (!numeric(w[want.column(v.column)], want_v)) continue;  // N/A, None, a string argument
      EXPECT_TRUE(v.has) << w[w_npu] << " " << v.column << ": msprobe " << want_v;
      if (!v.has) continue;
      EXPECT_TRUE(close(want_v, v.v))
          << w[w_npu] << " " << v.column << ": msprobe " << want_v << ", numprobe " << v.v;
      ++c.values;
    }
  }
  return c;
}

const Excuse kNoExcuse = [](const CompareRow&, const CompareRow*, MatchKind, const std::string&) {
  return std::string();
};

TEST(MappingGolden, LayerMappingPairsTheRowsMsprobePairs) {
  CompareMappings m;
  m.layer = true;
  const std::string lm = msprobe_fixture(std::string(kPair) + "/layer_mapping.yaml");
  m.layers = parse_layer_mapping(read_file(lm), lm);
  const PairResult p = run(m);
  // No excuse: layer mapping decides every row, as in msprobe.
  const Checked c = check_against_msprobe(
      p, "golden_compare_outputs_mstt/xf_ms_vs_pt_layer_mapping/compare_result.csv", kNoExcuse);
  EXPECT_EQ(c.golden_rows, 44u);
  EXPECT_EQ(c.paired, 32u);
  EXPECT_GT(c.values, 300u);
  // Every pair comes from the mapping; rows it leaves unpaired stay so (no later stage).
  for (const RowResult& r : p.rows) {
    if (r.pair.target >= 0 && r.pair.golden >= 0) {
      EXPECT_EQ(r.pair.how, MatchKind::kMapped);
    }
  }
}

TEST(MappingGolden, DataMappingYamlGivesTheSamePairsAsLayerMapping) {
  // msprobe runs -lm as a data mapping; its data_mapping.yaml through -dm pairs the same rows.
  CompareMappings dm;
  const std::string path =
      msprobe_fixture("golden_compare_outputs_mstt/xf_ms_vs_pt_layer_mapping/data_mapping.yaml");
  dm.data = parse_data_mapping(read_file(path), path);
  const PairResult by_data = run(dm);
  const Checked c = check_against_msprobe(
      by_data, "golden_compare_outputs_mstt/xf_ms_vs_pt_layer_mapping/compare_result.csv",
      kNoExcuse);
  EXPECT_EQ(c.paired, 32u);
  // No dtype warning on data-mapped rows (Int32 vs torch.int64 at the embedding input).
  for (const RowResult& r : by_data.rows) EXPECT_NE(r.reason, "dtype_mismatch");
}

TEST(MappingGolden, BuiltinApiMappingPairsWhatMsprobePairs) {
  CompareMappings m;
  m.api = true;
  const PairResult p = run(m);
  const Checked c = check_against_msprobe(
      p, "golden_compare_outputs_mstt/xf_ms_vs_pt_api_mapping/compare_result.csv",
      [](const CompareRow& t, const CompareRow* g, MatchKind how, const std::string& reason) {
        if (!g) return std::string();  // msprobe pairs it, numprobe does not: never excused
        // msprobe (mstt) merges rows on (name, shape): a shape difference unpairs both rows;
        // numprobe keeps the pair and reports shape_mismatch (docs/compare.md).
        if (t.shape != g->shape) return std::string("shape");
        // msprobe's dtype gate unpairs a string argument from PyTorch's null process group;
        // numprobe pairs and reports the kinds.
        if (reason == "kind_mismatch") return std::string("kind");
        // msprobe's fuzzy matching is off here; numprobe's order-preserving alignment always runs.
        if (how == MatchKind::kFuzzy) return std::string("fuzzy");
        return std::string();
      });
  EXPECT_EQ(c.golden_rows, 44u);
  EXPECT_EQ(c.paired, 8u);  // Tensor.__add__.1 (3), all_reduce (3), Mint.cos -> Torch.cos (2)
  size_t mapped = 0;
  for (const RowResult& r : p.rows) mapped += r.pair.how == MatchKind::kMapped;
  EXPECT_EQ(mapped, 2u);  // Mint.cos.0.forward -> Torch.cos.0.forward, input and output
}

}  // namespace
