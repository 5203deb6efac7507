#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "capture/capture_config.h"
#include "core/hash.h"
#include "core/npy.h"
#include "grad_probe/grad_compare.h"
#include "grad_probe/grad_probe_writer.h"
#include "grad_probe/grad_run.h"
#include "grad_probe/grad_summary.h"
#include "numprobe/error.h"
#include "test_support.h"

namespace numprobe::grad_probe {
namespace {

using capture::GradLevel;
using capture::GradProbeOptions;
namespace fs = std::filesystem;

GradProbeOptions level(GradLevel l) {
  GradProbeOptions o;
  o.level = l;
  return o;
}

TEST(GradSummary, StatisticsDirectionsAndIntervals) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // -1 and 0 and 1 sit on bounds: bucketize(right=False) puts x == b[i] into interval i.
  const std::vector<float> g = {-2.f, -1.f, -0.5f, 0.f, 0.25f, 1.f, 3.f, -0.f};
  std::vector<uint8_t> dir(g.size(), 7);
  GradStat s = compute_grad_stat("w", g.data(), g.size(), DType::kF32, {2, 4},
                                 level(GradLevel::kL2), dir.data());
  EXPECT_EQ(s.max, 3.0);
  EXPECT_EQ(s.min, -2.0);
  EXPECT_FLOAT_EQ(s.norm, std::sqrt(4 + 1 + 0.25 + 0.0625 + 1 + 9));
  EXPECT_EQ(dir, (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 1, 0}));
  // (-inf,-1] (-1,0] (0,1] (1,inf) =0
  EXPECT_EQ(s.interval_counts, (std::vector<uint64_t>{2, 3, 2, 1, 2}));
  const std::string line = summary_line(s, level(GradLevel::kL2));
  EXPECT_EQ(line.rfind("w,0.25,0.375,0.25,0.125,0.25,3.0,-2.0,", 0), 0u) << line;
  EXPECT_NE(line.find(",\"[2, 4]\"\r\n"), std::string::npos) << line;

  // A NaN: max/min NaN as torch.max, direction 0, the last interval.
  const std::vector<float> h = {nan, 0.5f};
  GradStat t = compute_grad_stat("b", h.data(), h.size(), DType::kF32, {2}, level(GradLevel::kL2),
                                 dir.data());
  EXPECT_TRUE(std::isnan(t.max) && std::isnan(t.min));
  EXPECT_EQ(dir[0], 0);
  EXPECT_EQ(t.interval_counts, (std::vector<uint64_t>{0, 0, 1, 1, 0}));
  EXPECT_NE(summary_line(t, level(GradLevel::kL2)).find(",nan,nan,"), std::string::npos);
}

TEST(GradSummary, Crc32OfFloat32BytesForEveryDtype) {
  const std::vector<float> f = {1.5f, -2.25f, 0.f, 1e-3f};
  GradStat a =
      compute_grad_stat("w", f.data(), f.size(), DType::kF32, {4}, level(GradLevel::kL0), nullptr);
  EXPECT_EQ(a.crc32, crc32(f.data(), f.size() * sizeof(float)));
  std::vector<uint16_t> bf;
  for (float x : f) bf.push_back(float_to_bf16(x));
  std::vector<float> back;
  for (uint16_t b : bf) back.push_back(bf16_to_float(b));
  GradStat b = compute_grad_stat("w", bf.data(), bf.size(), DType::kBF16, {4},
                                 level(GradLevel::kL0), nullptr);
  EXPECT_EQ(b.crc32, crc32(back.data(), back.size() * sizeof(float)));
  EXPECT_EQ(summary_line(a, level(GradLevel::kL0)).substr(0, 11), "w," + crc32_hex(a.crc32) + ",");
  const std::vector<int32_t> ints = {1};
  EXPECT_THROW(
      compute_grad_stat("i", ints.data(), 1, DType::kI32, {1}, level(GradLevel::kL1), nullptr),
      Error);
}

TEST(GradSummary, HeadersAsMsprobeNamesTheColumns) {
  EXPECT_EQ(summary_header(level(GradLevel::kL0)), "param_name,MD5,max,min,norm,shape\r\n");
  EXPECT_EQ(summary_header(level(GradLevel::kL1)), "param_name,max,min,norm,shape\r\n");
  GradProbeOptions o = level(GradLevel::kL2);
  o.bounds = {-0.5, 2};
  o.bounds_text = {"-0.5", "2"};
  EXPECT_EQ(summary_header(o),
            "param_name,\"(-inf, -0.5]\",\"(-0.5, 2]\",\"(2, inf)\",=0,max,min,norm,shape\r\n");
}

capture::CaptureConfig config(const std::string& dump, GradLevel l) {
  capture::CaptureConfig c;
  c.task = capture::Task::kGradProbe;
  c.dump_path = dump;
  c.grad_probe.level = l;
  return c;
}

// Writes steps 0..n-1 of a two-parameter run; `flip_from` flips the sign of w from that step.
void write_run(const std::string& dir, int n, int flip_from, GradLevel l = GradLevel::kL1) {
  GradProbeWriter w(config(dir, l), 0);
  for (int s = 0; s < n; ++s) {
    std::vector<float> wg(12), bg(3);
    for (size_t i = 0; i < wg.size(); ++i) wg[i] = float((i * 7 + s) % 5) - 2.f;
    for (size_t i = 0; i < bg.size(); ++i) bg[i] = float(i) - 1.f + 0.5f * float(s);
    if (flip_from >= 0 && s >= flip_from)
      for (float& x : wg) x = -x;
    w.begin_step(s);
    w.add("fc.weight", wg.data(), wg.size(), DType::kF32, {3, 4});
    w.add("fc.bias", bg.data(), bg.size(), DType::kF32, {3});
    w.end_step();
  }
}

TEST(GradProbeWriter, MsprobeLayoutAndFiles) {
  const std::string d = numprobe::testing::scratch_dir("gp_layout");
  write_run(d + "/run", 2, -1);
  const std::string text = numprobe::testing::read_file(d + "/run/rank0/grad_summary_1.csv");
  EXPECT_EQ(text.substr(0, 3), "\xEF\xBB\xBF");
  const GradSummary s = parse_grad_summary(text, "x");
  EXPECT_EQ(s.params, (std::vector<std::string>{"fc.weight", "fc.bias"}));
  NpyFile f = NpyFile::open(d + "/run/rank0/step1/fc.weight.npy");
  EXPECT_EQ(f.header().descr, "|b1");
  EXPECT_EQ(f.header().shape, (std::vector<int64_t>{3, 4}));
  // L0 writes no direction files.
  write_run(d + "/l0", 1, -1, GradLevel::kL0);
  EXPECT_TRUE(fs::exists(d + "/l0/rank0/grad_summary_0.csv"));
  EXPECT_FALSE(fs::exists(d + "/l0/rank0/step0"));
}

TEST(GradCompare, IdenticalRunsAgreeAndAFlipIsNamedAtItsStep) {
  const std::string d = numprobe::testing::scratch_dir("gp_compare");
  write_run(d + "/a", 4, -1);
  write_run(d + "/b", 4, -1);
  write_run(d + "/c", 4, 2);
  GradCompareResult same = compare_grad_runs(d + "/a", d + "/b", {});
  EXPECT_FALSE(same.first.has_value());
  ASSERT_EQ(same.ranks.size(), 1u);
  EXPECT_EQ(same.ranks[0].steps, (std::vector<int64_t>{0, 1, 2, 3}));
  for (double v : same.ranks[0].summary) EXPECT_EQ(v, 1.0);
  GradCompareResult diff = compare_grad_runs(d + "/a", d + "/c", {});
  ASSERT_TRUE(diff.first.has_value());
  EXPECT_EQ(diff.first->step, 2);
  EXPECT_EQ(diff.first->parameter, "fc.weight");
  EXPECT_LT(diff.first->similarity, 0.97);
  const std::string json_path = write_grad_compare(diff, d + "/out");
  const std::string json = numprobe::testing::read_file(json_path);
  EXPECT_NE(json.find("\"first_disagreement\": {"), std::string::npos);
  const auto csv = numprobe::testing::read_csv(d + "/out/rank0/similarities.csv");
  EXPECT_EQ(csv.header[0].substr(3), "step");  // after the BOM
  EXPECT_EQ(csv.rows.back()[0], "summary");
  EXPECT_NE(numprobe::testing::read_file(d + "/out/grad_compare.html").find("<svg"),
            std::string::npos);
  write_grad_compare(same, d + "/out_same");
  EXPECT_NE(numprobe::testing::read_file(d + "/out_same/grad_compare.json")
                .find("\"first_disagreement\": null"),
            std::string::npos);
}

TEST(GradCompare, MissingStepsAndFilesAreNamedGaps) {
  const std::string d = numprobe::testing::scratch_dir("gp_gaps");
  write_run(d + "/a", 4, -1);
  write_run(d + "/b", 4, -1);
  fs::remove_all(d + "/b/rank0/step1");
  fs::remove(d + "/b/rank0/step3/fc.bias.npy");
  write_run(d + "/a2", 4, -1);
  fs::remove(d + "/a2/rank0/grad_summary_2.csv");  // as a run killed inside step 2 leaves it
  GradCompareResult k = compare_grad_runs(d + "/a", d + "/a2", {});
  ASSERT_EQ(k.gaps.size(), 1u);
  EXPECT_EQ(k.gaps[0].what, "run2 has step2/ but no grad_summary_2.csv (an interrupted step?)");
  EXPECT_EQ(k.ranks[0].steps, (std::vector<int64_t>{0, 1, 3}));
  GradCompareResult r = compare_grad_runs(d + "/a", d + "/b", {});
  ASSERT_EQ(r.gaps.size(), 2u);
  EXPECT_EQ(r.gaps[0].step, 1);
  EXPECT_NE(r.gaps[0].what.find("run2 has grad_summary_1.csv but no step1"), std::string::npos);
  EXPECT_EQ(r.gaps[1].step, 3);
  EXPECT_EQ(r.gaps[1].parameter, "fc.bias");
  EXPECT_EQ(r.ranks[0].steps, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_FALSE(r.first.has_value());
}

TEST(GradCompare, BadInputIsAnErrorNamingTheFile) {
  const std::string d = numprobe::testing::scratch_dir("gp_bad");
  write_run(d + "/a", 2, -1);
  write_run(d + "/b", 2, -1);
  const std::string bad = d + "/b/rank0/grad_summary_0.csv";
  numprobe::testing::write_file(bad, "param_name,max,min,norm,shape\r\nfc.weight,1.0\r\n");
  try {
    compare_grad_runs(d + "/b", d + "/a", {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bad);
    EXPECT_NE(std::string(e.what()).find("line 2: 2 cells, the header has 5"), std::string::npos);
  }
  // A direction file that is not bool.
  const float x[12] = {};
  write_npy(d + "/a/rank0/step1/fc.weight.npy", x, DType::kF32, {3, 4});
  EXPECT_THROW(compare_grad_runs(d + "/a", d + "/b", {}), InputError);
  EXPECT_THROW(compare_grad_runs(d + "/nothing", d + "/b", {}), InputError);
  write_run(d + "/l0a", 1, -1, GradLevel::kL0);
  write_run(d + "/l0b", 1, -1, GradLevel::kL0);
  EXPECT_THROW(compare_grad_runs(d + "/l0a", d + "/l0b", {}), Error);
  EXPECT_THROW(parse_grad_summary("", "e.csv"), InputError);
  EXPECT_THROW(parse_grad_summary("name,max\r\n", "e.csv"), InputError);
  EXPECT_THROW(parse_grad_summary("param_name,max,min,norm,shape\r\na/b,1,1,1,[]\r\n", "e.csv"),
               InputError);
}

TEST(GradCompare, HtmlEscapesNames) {
  GradCompareResult r;
  r.run1 = "<run1>";
  r.run2 = "b";
  RankCompare rc;
  rc.steps = {0, 1};
  rc.summary = {1.0, 0.5};
  rc.params.push_back({"x<script>", {1.0, 0.5}, 4});
  r.ranks.push_back(rc);
  r.first = Disagreement{0, 1, "x<script>", 0.5, "below_threshold", {}};
  const std::string h = render_grad_compare_html(r);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_NE(h.find("x&lt;script&gt;"), std::string::npos);
  EXPECT_NE(h.find("class=\"marker\""), std::string::npos);
}

}  // namespace
}  // namespace numprobe::grad_probe
