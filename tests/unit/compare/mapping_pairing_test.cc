// How each user mapping pairs entries and rows (plan_mappings + pair_entries + pair_rows), on
// small hand-written MindSpore / PyTorch dumps.
#include <gtest/gtest.h>

#include <map>

#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"

using namespace numprobe;

namespace {

std::string leaf(const char* fw, const char* dtype, double max) {
  return std::string(R"({"type": ")") + fw + R"(.Tensor", "dtype": ")" + dtype +
         R"(", "shape": [4], "Max": )" + std::to_string(max) +
         R"(, "Min": 0, "Mean": 0.5, "Norm": 1})";
}

// entries: name -> {"input_args": [n leaves], "output": [1 leaf]}
RankDump dump(const char* fw, const std::vector<std::pair<std::string, int>>& entries) {
  const bool ms = std::string(fw) == "mindspore";
  const char* dtype = ms ? "Float32" : "torch.float32";
  std::string j = std::string(R"({"task": "statistics", "level": "mix", "framework": ")") + fw +
                  R"(", "dump_data_dir": null, "data": {)";
  bool first = true;
  for (const auto& [name, inputs] : entries) {
    if (!first) j += ", ";
    first = false;
    j += "\"" + name + "\": {\"input_args\": [";
    for (int i = 0; i < inputs; ++i) j += (i ? ", " : "") + leaf(fw, dtype, 1 + i);
    j += "], \"input_kwargs\": {}, \"output\": [" + leaf(fw, dtype, 9) + "]}";
  }
  j += "}}";
  RankDump d;
  d.dump = parse_dump_json(j, std::string(fw) + ".json");
  return d;
}

// target row name -> (golden row name or "", match kind)
std::map<std::string, std::pair<std::string, std::string>> pairs(RankDump t, RankDump g,
                                                                 const CompareMappings& m) {
  PairResult p;
  p.target = std::move(t);
  p.golden = std::move(g);
  compare_pair(p, &m);
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const RowResult& r : p.rows) {
    if (r.pair.target < 0) continue;
    out[std::string(p.target_rows[r.pair.target].name)] = {
        r.pair.golden >= 0 ? std::string(p.golden_rows[r.pair.golden].name) : "",
        match_kind_name(r.pair.how)};
  }
  return out;
}

TEST(MappingPairing, CellMappingRenamesCellsToModules) {
  auto ms = [] {
    return dump("mindspore", {{"Cell.fc1.Dense.forward.0", 1},
                              {"Cell.conv1.Conv2d.forward.0", 1},
                              {"Cell.head.Dense.forward.0", 1}});
  };
  auto pt = [] {
    return dump("pytorch", {{"Module.fc1.Linear.forward.0", 1},
                            {"Module.conv3.Conv2d.forward.0", 1},
                            {"Module.head.Dense.forward.0", 1}});
  };
  CompareMappings m;
  m.cell = true;
  m.cells = {{"fc1.Dense", "fc1.Linear"}, {"conv1.Conv2d", "conv3.Conv2d"}};
  auto p = pairs(ms(), pt(), m);
  EXPECT_EQ(p["Cell.fc1.Dense.forward.0.input.0"].first, "Module.fc1.Linear.forward.0.input.0");
  EXPECT_EQ(p["Cell.fc1.Dense.forward.0.input.0"].second, "mapped");
  EXPECT_EQ(p["Cell.conv1.Conv2d.forward.0.output.0"].first,
            "Module.conv3.Conv2d.forward.0.output.0");
  // Not in the yaml: Cell -> Module alone.
  EXPECT_EQ(p["Cell.head.Dense.forward.0.output.0"].first, "Module.head.Dense.forward.0.output.0");
  EXPECT_EQ(p["Cell.head.Dense.forward.0.output.0"].second, "mapped");

  // Without -cm none of these names meet (fuzzy alignment may still pair by signature, but
  // never as "mapped").
  for (const auto& [row, g] : pairs(ms(), pt(), CompareMappings{})) EXPECT_NE(g.second, "mapped");
}

TEST(MappingPairing, BuiltinApiNamesAndRenumbering) {
  auto ms = [] {
    return dump("mindspore", {{"Functional.add.0.forward", 2},
                              {"Mint.cos.3.forward", 1},
                              {"Functional.relu.0.forward", 1}});
  };
  auto pt = [] {
    return dump(
        "pytorch",
        {{"Torch.add.0.forward", 2}, {"Torch.cos.0.forward", 1}, {"Functional.relu.0.forward", 1}});
  };
  CompareMappings m;
  m.api = true;
  auto p = pairs(ms(), pt(), m);
  EXPECT_EQ(p["Functional.add.0.forward.input.1"].first, "Torch.add.0.forward.input.1");
  EXPECT_EQ(p["Functional.add.0.forward.input.1"].second, "mapped");
  // Renamed to Torch.cos.3.forward, absent: renumbering by the golden-side op pairs it.
  EXPECT_EQ(p["Mint.cos.3.forward.output.0"].first, "Torch.cos.0.forward.output.0");
  EXPECT_EQ(p["Mint.cos.3.forward.output.0"].second, "renumbered");
  EXPECT_EQ(p["Functional.relu.0.forward.output.0"].second, "exact");
}

TEST(MappingPairing, UserApiMappingRemapsArguments) {
  auto ms = [] { return dump("mindspore", {{"Functional.scaled.0.forward", 3}}); };
  auto pt = [] { return dump("pytorch", {{"NPU.npu_scaled.0.forward", 3}}); };
  CompareMappings m;
  m.api = true;
  ApiArgMapping a;
  a.ms_api = "Functional.scaled";
  a.pt_api = "NPU.npu_scaled";
  a.ms_args = {"0", "2"};
  a.pt_args = {"1", "0"};
  a.ms_outputs = {"0"};
  a.pt_outputs = {"0"};
  m.apis = {a};
  auto p = pairs(ms(), pt(), m);
  EXPECT_EQ(p["Functional.scaled.0.forward.input.0"].first, "NPU.npu_scaled.0.forward.input.1");
  EXPECT_EQ(p["Functional.scaled.0.forward.input.2"].first, "NPU.npu_scaled.0.forward.input.0");
  EXPECT_EQ(p["Functional.scaled.0.forward.input.2"].second, "mapped");
  // Not named by the item: stays unpaired, as msprobe "abandons" it.
  EXPECT_EQ(p["Functional.scaled.0.forward.input.1"].first, "");
  EXPECT_EQ(p["Functional.scaled.0.forward.output.0"].first, "NPU.npu_scaled.0.forward.output.0");

  // An item whose pt_api is absent from the golden dump is ignored.
  m.apis[0].pt_api = "NPU.other";
  auto q = pairs(ms(), pt(), m);
  EXPECT_NE(q["Functional.scaled.0.forward.input.0"].first, "NPU.npu_scaled.0.forward.input.1");
}

TEST(MappingPairing, DataMappingRowsWinAndDisableTheDtypeCheck) {
  auto ms = [] {
    return dump("mindspore", {{"Functional.a.0.forward", 2}, {"Functional.b.0.forward", 1}});
  };
  auto pt = [] {
    return dump("pytorch", {{"Functional.a.0.forward", 2}, {"Functional.x.0.forward", 1}});
  };
  CompareMappings m;
  m.data = {{"Functional.a.0.forward.input.0", "Functional.a.0.forward.input.1"},
            {"Functional.a.0.forward.input.1", "N/A"},
            {"Functional.b.0.forward.input.0", "Functional.x.0.forward.input.0"},
            {"Functional.b.0.forward.output.0", "Functional.x.0.forward.output.0"},
            {"Nowhere.0.forward.input.0", "Functional.x.0.forward.input.0"}};
  auto p = pairs(ms(), pt(), m);
  EXPECT_EQ(p["Functional.a.0.forward.input.0"].first, "Functional.a.0.forward.input.1");
  EXPECT_EQ(p["Functional.a.0.forward.input.0"].second, "mapped");
  EXPECT_EQ(p["Functional.a.0.forward.input.1"].first, "");  // N/A: stays unpaired
  // Rows the mapping does not name keep their own name (exact).
  EXPECT_EQ(p["Functional.a.0.forward.output.0"].first, "Functional.a.0.forward.output.0");
  EXPECT_EQ(p["Functional.a.0.forward.output.0"].second, "exact");
  EXPECT_EQ(p["Functional.b.0.forward.output.0"].first, "Functional.x.0.forward.output.0");

  // Float32 vs torch.float32 is the same dtype; a real difference warns unless data-mapped.
  PairResult r;
  r.target = dump("mindspore", {{"Functional.a.0.forward", 1}});
  r.golden = dump("pytorch", {{"Functional.a.0.forward", 1}});
  compare_pair(r);
  for (const RowResult& row : r.rows) EXPECT_NE(row.reason, "dtype_mismatch");
}

}  // namespace
