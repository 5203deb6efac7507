// Pairing an msprobe dump with a numprobe dump of the same computation (issue 16): aliases,
// positional vs keyword inputs, in-place module inputs recorded after the op.
#include <gtest/gtest.h>

#include <filesystem>

#include "compare/api_signature.h"
#include "numprobe/compare.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

namespace {

std::string tensor(double max, double min, double mean, double norm) {
  return R"({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": )" +
         std::to_string(max) + R"(, "Min": )" + std::to_string(min) + R"(, "Mean": )" +
         std::to_string(mean) + R"(, "Norm": )" + std::to_string(norm) + "}";
}

const std::string kT = tensor(1, 0, 0.5, 1);

std::string dump(const std::string& entries) {
  return std::string(
             R"({"task": "statistics", "level": "mix", "framework": "pytorch", "data": {)") +
         entries + "}}";
}

std::string api(const std::string& name) {
  return "\"" + name + "\": {\"input_args\": [" + kT + "], \"output\": [" + kT + "]}";
}

TEST(ApiSignature, PositionAndKeywordAreTwoSpellingsOfOneInput) {
  EXPECT_EQ(other_input_spelling("Functional.layer_norm", "input.2"), "input.weight");
  EXPECT_EQ(other_input_spelling("Functional.layer_norm", "input.eps"), "input.4");
  EXPECT_EQ(other_input_spelling("Functional.layer_norm", "input.3.0"), "input.bias.0");
  EXPECT_EQ(other_input_spelling("Functional.batch_norm", "input.momentum"), "input.6");
  EXPECT_EQ(other_input_spelling("Functional.layer_norm", "input.9"), "");
  EXPECT_EQ(other_input_spelling("Functional.layer_norm", "input.nonsense"), "");
  EXPECT_EQ(other_input_spelling("Functional.layer_norm", "output.0"), "");
  EXPECT_EQ(other_input_spelling("Torch.matmul", "input.1"), "");  // a builtin: never re-spelled
}

TEST(PairEntries, OneFunctionUnderTwoNamesPairsAsAnAlias) {
  DumpFile t =
      parse_dump_json(dump(api("VF.lstm.0.forward") + ", " + api("Functional.relu.0.forward") +
                           ", " + api("Functional.relu.1.forward")),
                      "t");
  DumpFile g =
      parse_dump_json(dump(api("Torch.lstm.0.forward") + ", " + api("Torch.relu.0.forward") + ", " +
                           api("Torch.relu.1.forward")),
                      "g");
  EntryPairing p = pair_entries(t, g);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.golden_of[i], static_cast<int64_t>(i));
    EXPECT_EQ(p.how[i], MatchKind::kAlias);
  }
  EXPECT_STREQ(match_kind_name(MatchKind::kAlias), "alias");
  // Modules and collectives have no aliases.
  DumpFile tm = parse_dump_json(dump(api("Distributed.all_reduce.0.forward")), "t");
  DumpFile gm = parse_dump_json(dump(api("Torch.all_reduce.0.forward")), "g");
  EXPECT_EQ(pair_entries(tm, gm).golden_of[0], -1);
}

TEST(PairRows, PositionalAndKeywordInputsPairThroughTheSignature) {
  // layer_norm(x, s, w, b, 1e-5) against layer_norm(x, s, weight=w, bias=b, eps=1e-5).
  const std::string shape = R"({"type": "torch.Size", "value": [4]})";
  const std::string eps = R"({"type": "float", "value": 1e-05})";
  DumpFile t = parse_dump_json(
      dump("\"Functional.layer_norm.0.forward\": {\"input_args\": [" + kT + ", " + shape + ", " +
           kT + ", " + kT + ", " + eps + "], \"input_kwargs\": {}, \"output\": [" + kT + "]}"),
      "t");
  DumpFile g =
      parse_dump_json(dump("\"Functional.layer_norm.0.forward\": {\"input_args\": [" + kT + ", " +
                           shape + "], \"input_kwargs\": {\"weight\": " + kT + ", \"bias\": " + kT +
                           ", \"eps\": " + eps + "}, \"output\": [" + kT + "]}"),
                      "g");
  auto tr = flatten_rows(t), gr = flatten_rows(g);
  auto rows = pair_rows(pair_entries(t, g), tr, gr);
  size_t paired = 0;
  for (const RowPair& r : rows) {
    EXPECT_GE(r.target, 0);
    EXPECT_GE(r.golden, 0) << tr[static_cast<size_t>(r.target)].name;
    paired += r.target >= 0 && r.golden >= 0;
  }
  EXPECT_EQ(paired, 6u);
}

// One side (msprobe) recorded ReLU(inplace=True)'s input after the op: its input has the output's
// statistics. The pair is excused and no divergence is reported; a module whose outputs disagree
// is not excused.
TEST(CompareDumps, InplaceModuleInputRecordedAfterTheOpIsExcused) {
  const std::string before = tensor(2, -3, 0.1, 5), after = tensor(2, 0, 0.9, 4);
  auto module = [&](const std::string& in, const std::string& out) {
    return "\"Module.relu.ReLU.forward.0\": {\"input_args\": [" + in +
           "], \"input_kwargs\": {}, \"output\": [" + out + "]}";
  };
  for (bool outputs_agree : {true, false}) {
    std::string a = scratch_dir("inplace_a"), b = scratch_dir("inplace_b");
    std::filesystem::create_directories(a + "/step0/rank");
    std::filesystem::create_directories(b + "/step0/rank");
    write_file(a + "/step0/rank/dump.json", dump(module(before, after)));
    write_file(b + "/step0/rank/dump.json",
               dump(outputs_agree ? module(after, after) : module(before, before)));
    CompareReport r = compare_dumps(a, b);
    ASSERT_EQ(r.pairs.size(), 1u);
    const PairResult& p = r.pairs[0];
    size_t excused = 0;
    for (const RowResult& row : p.rows) excused += row.excused;
    if (outputs_agree) {
      EXPECT_EQ(excused, 1u);
      EXPECT_EQ(p.error + p.warning, 0u);
      EXPECT_FALSE(p.first_divergence.has_value());
    } else {
      EXPECT_EQ(excused, 0u);
      EXPECT_TRUE(p.first_divergence.has_value());
    }
  }
}

}  // namespace

namespace {

// msprobe on torch 2.x records an in-place relu_'s backward output as its incoming gradient. The
// row is excused when the forward ran in place (by name or by an `inplace` argument), and only
// then.
TEST(CompareDumps, InplaceBackwardRecordedAsItsIncomingGradientIsExcused) {
  const std::string grad_in = tensor(1, -1, 0.1, 3), masked = tensor(1, -1, 0.05, 2);
  auto entries = [&](const std::string& fwd_inplace, const std::string& out) {
    return "\"Functional.relu.0.forward\": {\"input_args\": [" + kT +
           "], \"input_kwargs\": {\"inplace\": {\"type\": \"bool\", \"value\": " + fwd_inplace +
           "}}, \"output\": [" + kT + "]}, \"Functional.relu.0.backward\": {\"input\": [" +
           grad_in + "], \"output\": [" + out + "]}";
  };
  for (const char* inplace : {"true", "false"}) {
    std::string a = scratch_dir("passthrough_a"), b = scratch_dir("passthrough_b");
    std::filesystem::create_directories(a + "/step0/rank");
    std::filesystem::create_directories(b + "/step0/rank");
    write_file(a + "/step0/rank/dump.json", dump(entries(inplace, masked)));
    write_file(b + "/step0/rank/dump.json", dump(entries(inplace, grad_in)));
    CompareReport r = compare_dumps(a, b);
    ASSERT_EQ(r.pairs.size(), 1u);
    size_t excused = 0;
    for (const RowResult& row : r.pairs[0].rows) excused += row.excused;
    const bool in_place = std::string(inplace) == "true";
    EXPECT_EQ(excused, in_place ? 1u : 0u) << inplace;
    EXPECT_EQ(r.pairs[0].first_divergence.has_value(), !in_place) << inplace;
  }
}

}  // namespace
