// compare_checkpoints: msprobe's l2/cos, status thresholds, worst-first order, one-sided
// parameters, shape and dtype mismatches, and the JSON/CSV files.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_compare.h"
#include "ckpt/ckpt_report.h"
#include "ckpt_test_util.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

using testutil::f32_safetensors;

Checkpoint open_image(const std::string& name, const std::string& image) {
  const std::string path = testing::scratch_dir(name) + "/m.safetensors";
  testing::write_file(path, image);
  return Checkpoint::open(path);
}

const ParamResult& get(const CkptCompareResult& r, const std::string& name) {
  for (const ParamResult& p : r.params)
    if (p.name == name) return p;
  throw Error("no " + name);
}

TEST(CkptCompare, MetricsStatusAndOrder) {
  const Checkpoint a = open_image("cmp_a", f32_safetensors({{"same", {1, 2, 3}},
                                                            {"tiny", {1, 2, 3.00001f}},
                                                            {"off", {1, 2, 4}},
                                                            {"far", {3, 2, 1}},
                                                            {"zero", {0, 0, 0}},
                                                            {"shape", {1, 2}},
                                                            {"scalar", {2}},
                                                            {"a_only", {1}}}));
  const Checkpoint b = open_image("cmp_b", f32_safetensors({{"same", {1, 2, 3}},
                                                            {"tiny", {1, 2, 3}},
                                                            {"off", {1, 2, 3}},
                                                            {"far", {1, 2, 3}},
                                                            {"zero", {1, 0, 0}},
                                                            {"shape", {1, 2, 3}},
                                                            {"scalar", {-2}},
                                                            {"b_only", {1}}}));
  const CkptCompareResult r = compare_checkpoints(a, b);
  EXPECT_EQ(r.summary.compared, 6u);
  EXPECT_EQ(r.summary.only_a, 1u);
  EXPECT_EQ(r.summary.only_b, 1u);
  EXPECT_EQ(r.summary.shape_mismatch, 1u);
  const ParamResult& same = get(r, "same");
  EXPECT_EQ(same.status, ParamStatus::kPass);
  EXPECT_EQ(*same.l2, 0.0);
  EXPECT_NEAR(*same.cos, 1.0, 1e-15);
  // msprobe: l2 = ||a - b||, cos = a.b / (|a| |b|).
  const ParamResult& off = get(r, "off");
  EXPECT_DOUBLE_EQ(*off.l2, 1.0);
  EXPECT_NEAR(*off.cos, 17.0 / (std::sqrt(21.0) * std::sqrt(14.0)), 1e-12);
  EXPECT_EQ(off.status, ParamStatus::kWarning);  // cos 0.9934
  EXPECT_DOUBLE_EQ(*off.max_abs, 1.0);
  EXPECT_NEAR(*off.max_rel, 1.0 / 3, 1e-12);
  EXPECT_EQ(get(r, "tiny").status, ParamStatus::kPass);
  EXPECT_EQ(get(r, "far").status, ParamStatus::kError);
  // One side all zeros: msprobe's cos is None.
  EXPECT_FALSE(get(r, "zero").cos.has_value());
  EXPECT_EQ(get(r, "zero").status, ParamStatus::kError);
  EXPECT_EQ(get(r, "scalar").status, ParamStatus::kError);
  EXPECT_EQ(*get(r, "scalar").cos, -1.0);
  EXPECT_EQ(get(r, "a_only").only_in, 'a');
  EXPECT_EQ(get(r, "b_only").only_in, 'b');
  EXPECT_EQ(get(r, "shape").status, ParamStatus::kError);
  // Worst first: errors with no cos, then by cos; warnings; passes.
  ASSERT_EQ(r.params.size(), 9u);
  EXPECT_EQ(r.params[5].name, "far");
  EXPECT_EQ(r.params[6].name, "off");
  EXPECT_EQ(r.params.back().status, ParamStatus::kPass);
  for (size_t k = 1; k < r.params.size(); ++k)
    EXPECT_GE(r.params[k - 1].status, r.params[k].status);
}

TEST(CkptCompare, DtypeMismatchIsComparedAndFlagged) {
  const Checkpoint a = open_image("dt_a", f32_safetensors({{"w", {1, 2}}}));
  const Checkpoint b = open_image(
      "dt_b",
      testutil::safetensors_image(R"({"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                                  std::string("\x80\x3f\x00\x40", 4)));
  const CkptCompareResult r = compare_checkpoints(a, b);
  ASSERT_EQ(r.params.size(), 1u);
  EXPECT_EQ(r.summary.dtype_mismatch, 1u);
  EXPECT_EQ(r.params[0].status, ParamStatus::kWarning);
  EXPECT_EQ(*r.params[0].l2, 0.0);
  EXPECT_NE(r.params[0].reason.find("float32 vs bfloat16"), std::string::npos);
}

TEST(CkptCompare, SortWorstFirst) {
  std::vector<ParamResult> v(4);
  v[0].name = "p";
  v[0].cos = 1.0;
  v[1].name = "w";
  v[1].status = ParamStatus::kWarning;
  v[1].cos = 0.995;
  v[2].name = "e2";
  v[2].status = ParamStatus::kError;
  v[2].cos = 0.5;
  v[3].name = "e1";
  v[3].status = ParamStatus::kError;
  v[3].cos = 0.1;
  sort_worst_first(v);
  EXPECT_EQ(v[0].name, "e1");
  EXPECT_EQ(v[1].name, "e2");
  EXPECT_EQ(v[2].name, "w");
  EXPECT_EQ(v[3].name, "p");
}

TEST(CkptCompare, JsonAndCsvFiles) {
  const Checkpoint a =
      open_image("out_a", f32_safetensors({{"w", {1, 2}}, {"s", {1, 2}}, {"x", {1}}}));
  const Checkpoint b = open_image("out_b", f32_safetensors({{"w", {1, 3}}, {"s", {1, 2, 3}}}));
  const CkptCompareResult r = compare_checkpoints(a, b);
  const std::string dir = testing::scratch_dir("ckpt_out");
  write_reports(r, dir + "/out.json", true);
  const std::string json = testing::read_file(dir + "/out.json");
  EXPECT_NE(json.find("\"numel\": [\n            2,\n            3\n        ]"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"only_in\": \"a\""), std::string::npos);
  EXPECT_NE(json.find("\"l2\": 1.0,"), std::string::npos);
  EXPECT_NE(json.find("\"status\": \"error\""), std::string::npos);
  const testing::CsvTable t = testing::read_csv(dir + "/out.csv");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows.back()[t.column("name")], "w");
  EXPECT_EQ(t.rows.back()[t.column("l2")], "1.0");
}

}  // namespace
}  // namespace numprobe::ckpt
