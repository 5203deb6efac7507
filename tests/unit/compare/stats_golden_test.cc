// Statistics- and md5-mode compare against what msprobe's own compare wrote for the same inputs
// (../shared/fixtures/msprobe/golden_compare_outputs_mstt). Differences are allowed only where
// msprobe is wrong, and each is named here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "numprobe/compare.h"
#include "numprobe/compare/pair.h"
#include "numprobe/compare/stats_metrics.h"
#include "numprobe/dump.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::CsvTable;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_csv;

namespace {

struct Compared {
  DumpFile t, g;
  RowSet trows, grows;  // point into t and g
  std::vector<RowPair> pairs;
};

Compared compare(const std::string& target, const std::string& golden) {
  Compared c;
  c.t = read_dump_json(msprobe_fixture(target));
  c.g = read_dump_json(msprobe_fixture(golden));
  c.trows = flatten_rows(c.t);
  c.grows = flatten_rows(c.g);
  c.pairs = pair_rows(pair_entries(c.t, c.g), c.trows, c.grows);
  return c;
}

// msprobe (mstt) merges on (name, shape): a shape difference leaves the target row unmatched.
bool msprobe_matched(const Compared& c, const RowPair& p) {
  if (p.target < 0 || p.golden < 0) return false;
  return c.trows[p.target].shape == c.grows[p.golden].shape;
}

double parse_number(const std::string& s) {
  if (s == "Nan" || s == "nan") return NAN;
  std::string v = s;
  while (!v.empty() && (v.back() == '\t' || v.back() == ' ')) v.pop_back();  // msprobe: "inf\t"
  if (!v.empty() && v.back() == '%') v.pop_back();
  return std::stod(v);
}

bool close(double a, double b) {
  if (a == b) return true;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= 1e-9 * std::fmax(1e-300, std::fmax(std::fabs(a), std::fabs(b))) ||
         std::fabs(a - b) < 1e-300;
}

// `operands` is the magnitude of the two statistics. msprobe subtracts values rounded to about 15
// decimal places (its 6.170012000015351e-09 is the difference of 0.000628078705631 and
// 0.000628072535619), so a difference of nearly equal values is judged with that absolute slack
// plus one ulp of the operands; the percentage likewise. Everything else is 1e-9 relative.
void check_diff(const std::string& row, const std::string& golden_diff,
                const std::string& golden_rel, const StatDiff& d, double operands) {
  if (golden_diff == "N/A" || golden_diff == "None" || golden_diff.empty()) {
    EXPECT_FALSE(d.has_diff && std::isfinite(d.diff)) << row;
    return;
  }
  ASSERT_TRUE(d.has_diff) << row;
  const double gd = parse_number(golden_diff);
  const double slack = 2e-15 + 1e-14 * operands;
  EXPECT_TRUE(close(gd, d.diff) || std::fabs(gd - d.diff) <= slack)
      << row << " " << golden_diff << " vs " << d.diff;
  if (golden_rel == "N/A" || golden_rel.empty()) {
    EXPECT_FALSE(d.has_rel) << row;
  } else if (golden_rel != "Nan") {
    ASSERT_TRUE(d.has_rel) << row;
    const double gr = parse_number(golden_rel);
    const double rel_slack = d.diff != 0 ? d.rel_percent * slack / std::fabs(d.diff) : 0;
    EXPECT_TRUE(close(gr, d.rel_percent) || std::fabs(gr - d.rel_percent) <= rel_slack)
        << row << " " << golden_rel << " vs " << d.rel_percent;
  }
}

// Runs the comparison of every target row with msprobe's CSV; returns the rows whose Result
// differs (ours "Warning" vs theirs), keyed by name.
std::map<std::string, std::string> check_statistics(const Compared& c,
                                                    const std::vector<RowPair>& pairs,
                                                    const CsvTable& csv) {
  const size_t name = csv.column("NPU Name"), bench = csv.column("Bench Name"),
               result = csv.column("Result");
  const size_t diffs[] = {csv.column("Max diff"), csv.column("Min diff"), csv.column("Mean diff"),
                          csv.column("L2norm diff")};
  const size_t rels[] = {csv.column("MaxRelativeErr"), csv.column("MinRelativeErr"),
                         csv.column("MeanRelativeErr"), csv.column("NormRelativeErr")};
  std::map<std::string, const std::vector<std::string>*, std::less<>> by_name;
  for (const auto& r : csv.rows) by_name[r[name]] = &r;
  std::map<std::string, std::string> result_differs;
  size_t checked = 0;
  for (const RowPair& p : pairs) {
    if (p.target < 0) continue;  // msprobe drops golden-only rows
    const CompareRow& tr = c.trows[p.target];
    auto it = by_name.find(tr.name);
    if (it == by_name.end()) {
      ADD_FAILURE() << "row missing in msprobe's output: " << tr.name;
      continue;
    }
    const auto& g = *it->second;
    ++checked;
    if (!msprobe_matched(c, p)) {
      EXPECT_EQ(g[bench], "N/A") << tr.name;
      continue;
    }
    EXPECT_EQ(g[bench], c.grows[p.golden].name);
    StatisticsMetrics m = statistics_metrics(tr, c.grows[p.golden]);
    const StatDiff* ours[] = {&m.max, &m.min, &m.mean, &m.norm};
    const CompareRow& gr = c.grows[p.golden];
    const double operands[] = {std::fmax(std::fabs(tr.max.v), std::fabs(gr.max.v)),
                               std::fmax(std::fabs(tr.min.v), std::fabs(gr.min.v)),
                               std::fmax(std::fabs(tr.mean.v), std::fabs(gr.mean.v)),
                               std::fmax(std::fabs(tr.norm.v), std::fabs(gr.norm.v))};
    for (int k = 0; k < 4; ++k)
      check_diff(std::string(tr.name), g[diffs[k]], g[rels[k]], *ours[k], operands[k]);
    bool theirs = g[result] == "Warning";
    if (theirs != m.warning) result_differs[std::string(tr.name)] = m.reason;
  }
  EXPECT_EQ(checked, csv.rows.size());
  return result_differs;
}

TEST(CompareStatistics, SyntheticEdgeCasesMatchMsprobe) {
  Compared c = compare("synthetic_edge_cases/statistics/npu/dump.json",
                       "synthetic_edge_cases/statistics/bench/dump.json");
  CsvTable csv =
      read_csv(msprobe_fixture("golden_compare_outputs_mstt/synth_statistics/compare_result.csv"));
  auto differs = check_statistics(c, c.pairs, csv);
  // msprobe bug 2: NaN statistics are never flagged. Ours flags the rows whose NaN/Inf pattern
  // differs between the runs; nothing else differs.
  for (const auto& [row, reason] : differs) {
    EXPECT_EQ(reason, "nan_inf_mismatch") << row;
  }
  EXPECT_TRUE(differs.count("Functional.nan_diff_pos.0.forward.output.0")) << differs.size();
  // The shape-mismatch and NPU-only rows are unmatched in both.
  size_t target_only = 0;
  for (const RowPair& p : c.pairs) target_only += p.golden < 0;
  EXPECT_EQ(target_only, 2u);  // npu_only input and output
}

TEST(CompareStatistics, ResNetStepToStepMatchesMsprobe) {
  Compared c = compare("quick_start_resnet50_gpu_mix_statistics/step0/proc2016/dump.json",
                       "quick_start_resnet50_gpu_mix_statistics/step1/proc2016/dump.json");
  CsvTable csv = read_csv(msprobe_fixture(
      "golden_compare_outputs_mstt/quickstart_step0_vs_step1_summary/compare_result.csv"));
  ASSERT_EQ(csv.rows.size(), 2822u);
  const size_t name = csv.column("NPU Name"), bench = csv.column("Bench Name");
  // msprobe bug 4: step1 numbers parameter grads from 1, so msprobe leaves all 161 rows
  // unmatched. Renumbering pairs them.
  size_t renumbered = 0, msprobe_unmatched = 0;
  for (const RowPair& p : c.pairs) renumbered += p.how == MatchKind::kRenumbered;
  for (const auto& r : csv.rows) msprobe_unmatched += r[bench] == "N/A";
  EXPECT_EQ(msprobe_unmatched, 161u);
  EXPECT_EQ(renumbered, 161u);
  // Every other row: same pairing and the same numbers.
  CsvTable matched = csv;
  matched.rows.clear();
  for (const auto& r : csv.rows) {
    if (r[bench] != "N/A") matched.rows.push_back(r);
  }
  std::vector<RowPair> exact;
  for (const RowPair& p : c.pairs) {
    if (p.how != MatchKind::kRenumbered && p.target >= 0) exact.push_back(p);
  }
  auto differs = check_statistics(c, exact, matched);
  // msprobe bug 8: its Warning divides by |max(npu, bench)| with the signed max, so two negative
  // statistics (-0.005 vs -0.01) warn although they differ by half the larger magnitude. Every
  // row where our Result differs must be one where only that signed rule fires.
  std::map<std::string, const RowPair*> pair_of;
  for (const RowPair& p : exact) pair_of[std::string(c.trows[p.target].name)] = &p;
  for (const auto& [row, reason] : differs) {
    EXPECT_EQ(reason, "") << row;  // theirs warns, ours does not
    const RowPair* p = pair_of.at(row);
    const CompareRow &t = c.trows[p->target], &g = c.grows[p->golden];
    bool signed_rule = false;
    for (auto [a, b] : {std::pair{t.max.v, g.max.v},
                        {t.min.v, g.min.v},
                        {t.mean.v, g.mean.v},
                        {t.norm.v, g.norm.v}}) {
      signed_rule |= std::fabs(a - b) / (std::fabs(std::fmax(a, b)) + 1e-10) > 0.5;
    }
    EXPECT_TRUE(signed_rule) << row;
  }
  EXPECT_EQ(differs.size(), 11u);
  (void)name;
}

TEST(CompareMd5, SyntheticEdgeCasesMatchMsprobe) {
  Compared c =
      compare("synthetic_edge_cases/md5/npu/dump.json", "synthetic_edge_cases/md5/bench/dump.json");
  CsvTable csv =
      read_csv(msprobe_fixture("golden_compare_outputs_mstt/synth_md5/compare_result.csv"));
  const size_t name = csv.column("NPU Name"), result = csv.column("Result"),
               npu_md5 = csv.column("NPU MD5"), bench_md5 = csv.column("BENCH MD5");
  std::map<std::string, const std::vector<std::string>*, std::less<>> by_name;
  for (const auto& r : csv.rows) by_name[r[name]] = &r;
  size_t checked = 0;
  for (const RowPair& p : c.pairs) {
    if (p.target < 0) continue;
    const CompareRow& tr = c.trows[p.target];
    auto it = by_name.find(tr.name);
    ASSERT_NE(it, by_name.end()) << tr.name;
    const auto& g = *it->second;
    ++checked;
    EXPECT_EQ(g[npu_md5], tr.md5) << tr.name;
    if (!msprobe_matched(c, p)) {
      EXPECT_EQ(g[result], "N/A") << tr.name;
      continue;
    }
    EXPECT_EQ(g[bench_md5], c.grows[p.golden].md5) << tr.name;
    EXPECT_EQ(g[result], md5_result(tr, c.grows[p.golden])) << tr.name;
  }
  EXPECT_EQ(checked, csv.rows.size());
}

TEST(CompareRows, NamesFollowMsprobeFlattening) {
  DumpFile d = read_dump_json(
      msprobe_fixture("quick_start_resnet50_gpu_mix_statistics/step0/proc2016/dump.json"));
  auto rows = flatten_rows(d);
  CsvTable csv = read_csv(msprobe_fixture(
      "golden_compare_outputs_mstt/quickstart_step0_vs_step1_summary/compare_result.csv"));
  const size_t name = csv.column("NPU Name"), dtype = csv.column("NPU Dtype"),
               shape = csv.column("NPU Tensor Shape");
  ASSERT_EQ(rows.size(), csv.rows.size());
  std::map<std::string, const std::vector<std::string>*, std::less<>> by_name;
  for (const auto& r : csv.rows) by_name[r[name]] = &r;
  for (const CompareRow& r : rows) {
    auto it = by_name.find(r.name);
    ASSERT_NE(it, by_name.end()) << r.name;
    EXPECT_EQ((*it->second)[dtype], r.dtype) << r.name;
    if (r.kind == RowKind::kTensor) {
      std::string s = "[";
      for (size_t i = 0; i < r.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(r.shape[i]);
      EXPECT_EQ((*it->second)[shape], s + "]") << r.name;
    }
  }
}

TEST(CompareMemory, EntryBodiesAreFreedButNamesAndHeaderStay) {
  // compare_dumps frees each side's entry bodies once its rows exist (docs/compare.md, "Threads
  // and memory"); what the reports read afterwards must still be there.
  const std::string root = msprobe_fixture("quick_start_resnet50_gpu_mix_statistics");
  const CompareReport rep = compare_dumps(root + "/step0", root + "/step1", 1);
  ASSERT_EQ(rep.pairs.size(), 1u);
  const PairResult& p = rep.pairs[0];
  for (const RankDump* d : {&p.target, &p.golden}) {
    EXPECT_TRUE(d->dump.tensors.empty());
    EXPECT_LT(d->dump.nodes.size(), 64u);  // the header only
    EXPECT_EQ(d->dump.task(), "statistics");
    EXPECT_EQ(d->dump.level(), "mix");
    EXPECT_EQ(d->dump.entries.size(), 760u);
    EXPECT_FALSE(d->dump.entry_name(759).empty());
  }
  // Rows still read their text (names, dtypes) after the bodies are gone.
  EXPECT_EQ(p.target_rows.size(), p.golden_rows.size());
  EXPECT_EQ(p.target_rows[0].name.substr(0, p.target_rows[0].suffix_at),
            p.target.dump.entry_name(p.target_rows[0].entry));
  EXPECT_EQ(p.target_rows[0].dtype, "torch.float32");
  const std::string csv = render_compare_csv(p, true);
  EXPECT_NE(csv.find(std::string(p.target_rows[0].name)), std::string::npos);
}

}  // namespace
