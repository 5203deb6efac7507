#include <gtest/gtest.h>

#include <filesystem>

#include "format/dump_writer.h"
#include "numprobe/compare.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

namespace {

const char* kTensor =
    R"({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0})";

std::string dump(const std::string& entries) {
  return std::string(R"({"task": "statistics", "level": "L1", "framework": "pytorch", "data": {)") +
         entries + "}}";
}

// Regression (review): golden rows of a paired entry whose target side has no rows were dropped
// and not counted anywhere.
TEST(PairRows, GoldenRowsOfAnEmptyTargetEntryAreReported) {
  DumpFile t = parse_dump_json(
      dump(R"("Functional.relu.0.forward": {"input_args": [], "output": []})"), "t");
  DumpFile g =
      parse_dump_json(dump(std::string(R"("Functional.relu.0.forward": {"input_args": [)") +
                           kTensor + R"(], "output": [)" + kTensor + "]}"),
                      "g");
  auto tr = flatten_rows(t), gr = flatten_rows(g);
  ASSERT_TRUE(tr.empty());
  auto pairs = pair_rows(pair_entries(t, g), tr, gr);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].target, -1);
  EXPECT_EQ(pairs[1].golden, 1);
}

TEST(PairRows, RenumberedCallsPair) {
  const std::string e = std::string("{\"output\": [") + kTensor + "]}";
  DumpFile t =
      parse_dump_json(dump("\"Module.fc.Linear.parameters_grad.0\": {\"weight\": [" +
                           std::string(kTensor) + "]}, \"Functional.gelu.3.forward\": " + e),
                      "t");
  DumpFile g =
      parse_dump_json(dump("\"Module.fc.Linear.parameters_grad.1\": {\"weight\": [" +
                           std::string(kTensor) + "]}, \"Functional.gelu.7.forward\": " + e),
                      "g");
  EntryPairing p = pair_entries(t, g);
  EXPECT_EQ(p.golden_of[0], 0);
  EXPECT_EQ(p.how[0], MatchKind::kRenumbered);
  EXPECT_EQ(p.golden_of[1], 1);
  EXPECT_TRUE(p.golden_only.empty());
}

// Regression (review): several rank-less dumps in one step (proc{pid} dirs, whose pids differ
// between runs) collapsed onto one key; they now pair by order within the step.
TEST(CompareDumps, RanklessDumpsPairByOrder) {
  std::string a = scratch_dir("rankless_a"), b = scratch_dir("rankless_b");
  const std::string body =
      dump(std::string("\"Functional.relu.0.forward\": {\"output\": [") + kTensor + "]}");
  for (const char* d : {"/step0/proc11", "/step0/proc12"}) {
    std::filesystem::create_directories(a + d);
    write_file(a + d + "/dump.json", body);
  }
  for (const char* d : {"/step0/proc901", "/step0/proc902"}) {
    std::filesystem::create_directories(b + d);
    write_file(b + d + "/dump.json", body);
  }
  CompareReport r = compare_dumps(a, b);
  ASSERT_EQ(r.pairs.size(), 2u);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_NE(r.pairs[0].golden_where.dir, r.pairs[1].golden_where.dir);
  EXPECT_EQ(r.pairs[0].pass, 1u);
}

}  // namespace

namespace {

std::string tensor_of(const std::string& shape, const std::string& dtype = "torch.float32") {
  return R"({"type": "torch.Tensor", "dtype": ")" + dtype + R"(", "shape": )" + shape +
         R"(, "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0})";
}

std::string api(const std::string& name, const std::string& shape) {
  return "\"" + name + "\": {\"input_args\": [" + tensor_of(shape) + "], \"output\": [" +
         tensor_of(shape) + "]}";
}

}  // namespace

// The fuzzy stage: an op renamed between versions (same signature) and an op present on one side
// only, between exactly paired anchors.
TEST(PairEntries, FuzzyAlignmentPairsBySignatureAndKeepsOrder) {
  DumpFile t = parse_dump_json(dump(api("Functional.linear.0.forward", "[2, 4]") + ", " +
                                    api("Functional.dropout.0.forward", "[9]") + ", " +
                                    api("Functional.gelu_new.0.forward", "[2, 4]") + ", " +
                                    api("Functional.softmax.0.forward", "[2, 4]")),
                               "t");
  DumpFile g = parse_dump_json(dump(api("Functional.linear.0.forward", "[2, 4]") + ", " +
                                    api("Functional.gelu.0.forward", "[2, 4]") + ", " +
                                    api("Functional.softmax.0.forward", "[2, 4]")),
                               "g");
  auto tr = flatten_rows(t), gr = flatten_rows(g);
  EntryPairing plain = pair_entries(t, g);
  EXPECT_EQ(plain.golden_of[2], -1);
  EntryPairing p = pair_entries(t, g, tr, gr);
  EXPECT_EQ(p.golden_of[0], 0);
  EXPECT_EQ(p.golden_of[1], -1);  // dropout: nothing like it in golden
  EXPECT_EQ(p.golden_of[2], 1);
  EXPECT_EQ(p.how[2], MatchKind::kFuzzy);
  EXPECT_EQ(p.golden_of[3], 2);
  EXPECT_EQ(p.how[3], MatchKind::kExact);
  EXPECT_TRUE(p.golden_only.empty());
  auto rows = pair_rows(p, tr, gr);
  size_t fuzzy = 0;
  for (const RowPair& r : rows) fuzzy += r.how == MatchKind::kFuzzy;
  EXPECT_EQ(fuzzy, 2u);
  EXPECT_STREQ(match_kind_name(MatchKind::kFuzzy), "fuzzy");
}

TEST(PairEntries, FuzzyPairsTheSameOpAcrossFrameworkPrefixes) {
  DumpFile t = parse_dump_json(
      dump(api("Mint.matmul.0.forward", "[3, 3]") + ", " + api("Mint.add.0.forward", "[3]")), "t");
  DumpFile g = parse_dump_json(
      dump(api("Torch.matmul.0.forward", "[3, 3]") + ", " + api("Tensor.add.0.forward", "[3]")),
      "g");
  EntryPairing p = pair_entries(t, g, flatten_rows(t), flatten_rows(g));
  EXPECT_EQ(p.golden_of[0], 0);
  EXPECT_EQ(p.golden_of[1], 1);
  EXPECT_EQ(p.how[1], MatchKind::kFuzzy);
}

TEST(PairEntries, FuzzyNeverPairsAcrossDirectionsOrUnrelatedOps) {
  DumpFile t = parse_dump_json(dump(api("Functional.relu.0.backward", "[5]") + ", " +
                                    api("Functional.tanh.0.forward", "[6]")),
                               "t");
  DumpFile g = parse_dump_json(dump(api("Functional.relu.0.forward", "[5]") + ", " +
                                    api("Functional.sigmoid.0.forward", "[7]")),
                               "g");
  EntryPairing p = pair_entries(t, g, flatten_rows(t), flatten_rows(g));
  EXPECT_EQ(p.golden_of[0], -1);
  EXPECT_EQ(p.golden_of[1], -1);
  EXPECT_EQ(p.golden_only.size(), 2u);
}
