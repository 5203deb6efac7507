// The graph build against msprobe's own graph of the same ResNet-50 pair (golden_graph_mstt), and
// the builder's rules on small made-up dumps.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <set>

#include "graph/graph_build.h"
#include "graph/graph_pair.h"
#include "graph/graph_run.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/error.h"
#include "test_support.h"

namespace numprobe::graph {
namespace {

using numprobe::testing::msprobe_fixture;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

struct DbNode {
  std::string type, up, subs, link;
  bool has_precision = false;
  double precision = 0;
  int64_t order = 0;
  std::string input, output;
};

// (data_source, node_name) -> node, read with SQLite itself.
std::map<std::pair<std::string, std::string>, DbNode> read_nodes(const std::string& path) {
  sqlite3* db = nullptr;
  // immutable: msprobe's file is in WAL mode, and even a read-only open would leave -shm and -wal
  // files beside a fixture that must stay untouched.
  const std::string uri = "file:" + path + "?immutable=1";
  EXPECT_EQ(sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr),
            SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT data_source, node_name, node_type, up_node, sub_nodes, "
                               "matched_node_link, precision_index, node_order, input_data, "
                               "output_data FROM tb_nodes",
                               -1, &s, nullptr),
            SQLITE_OK);
  std::map<std::pair<std::string, std::string>, DbNode> out;
  auto text = [&](int c) {
    const unsigned char* t = sqlite3_column_text(s, c);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  while (sqlite3_step(s) == SQLITE_ROW) {
    DbNode n;
    n.type = text(2);
    n.up = text(3);
    n.subs = text(4);
    n.link = text(5);
    n.has_precision = sqlite3_column_type(s, 6) != SQLITE_NULL;
    n.precision = sqlite3_column_double(s, 6);
    n.order = sqlite3_column_int64(s, 7);
    n.input = text(8);
    n.output = text(9);
    out[{text(0), text(1)}] = n;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

std::string resnet_pair_db() {
  static const std::string path = [] {
    GraphRunOptions o;
    o.target = msprobe_fixture("quick_start_resnet50_gpu_mix_statistics/step0");
    o.golden = msprobe_fixture("quick_start_resnet50_gpu_mix_statistics/step1");
    // One directory per test: ctest -j runs each test in its own process, all at once.
    o.out = scratch_dir(std::string("graph_resnet_") +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "/resnet.vis.db";
    return run_graph(o).path;
  }();
  return path;
}

TEST(GraphBuild, ResNetPairHasMsprobesHierarchy) {
  auto ours = read_nodes(resnet_pair_db());
  auto theirs =
      read_nodes(msprobe_fixture("golden_graph_mstt/compare_resnet50_step0_vs_step1.vis.db"));
  ASSERT_EQ(theirs.size(), 1696u);
  // Every node msprobe drew is drawn, of the same type and under the same parent.
  size_t same_parent = 0;
  for (const auto& [key, t] : theirs) {
    auto it = ours.find(key);
    ASSERT_NE(it, ours.end()) << key.first << " " << key.second;
    EXPECT_EQ(it->second.type, t.type) << key.second;
    EXPECT_EQ(it->second.up, t.up) << key.second;
    same_parent += it->second.up == t.up;
  }
  EXPECT_EQ(same_parent, theirs.size());
  // numprobe's additions are the parameter grads msprobe drops (BatchNorm's, whose backward hook
  // an in-place ReLU kept from firing), kept under the module's forward call.
  for (const auto& [key, o] : ours) {
    if (theirs.count(key)) continue;
    EXPECT_NE(key.second.find(".parameters_grad"), std::string::npos) << key.second;
    EXPECT_NE(o.up.find("BatchNorm2d.forward"), std::string::npos) << key.second;
  }
}

TEST(GraphBuild, ResNetPairColoursAsMsprobe) {
  auto ours = read_nodes(resnet_pair_db());
  auto theirs =
      read_nodes(msprobe_fixture("golden_graph_mstt/compare_resnet50_step0_vs_step1.vis.db"));
  // msprobe's precision_index of every target node both tools coloured.
  size_t compared = 0;
  for (const auto& [key, t] : theirs) {
    if (key.first != "NPU" || !t.has_precision) continue;
    const DbNode& o = ours.at(key);
    if (!o.has_precision) continue;
    ++compared;
    EXPECT_NEAR(o.precision, t.precision, 1e-6) << key.second;
  }
  EXPECT_GT(compared, 600u);
  EXPECT_DOUBLE_EQ(ours.at({"NPU", "Functional.conv2d.0.forward"}).precision, 1.0);
  EXPECT_DOUBLE_EQ(ours.at({"NPU", "Tensor.add_.0.forward"}).precision, 0.5);
  // Matched nodes link to their partner's chain; the golden side carries no colour of its own.
  EXPECT_EQ(ours.at({"NPU", "Functional.conv2d.0.forward"}).link,
            R"(["DefaultModel", "Module.conv1.Conv2d.forward.0", "Functional.conv2d.0.forward"])");
  EXPECT_FALSE(ours.at({"Bench", "Functional.conv2d.0.forward"}).has_precision);
}

TEST(GraphBuild, TargetDataCarriesStatisticsMetricsAndVerdict) {
  auto ours = read_nodes(resnet_pair_db());
  const DbNode& conv = ours.at({"NPU", "Functional.conv2d.0.forward"});
  EXPECT_NE(conv.input.find(R"("Functional.conv2d.0.forward.input.0": {"type": "torch.Tensor")"),
            std::string::npos);
  EXPECT_NE(conv.input.find(R"("shape": "[32, 3, 224, 224]")"), std::string::npos);
  EXPECT_NE(conv.input.find(R"("MaxRelativeErr": )"), std::string::npos);
  EXPECT_NE(conv.input.find(R"("Status": )"), std::string::npos);
  EXPECT_NE(conv.output.find(R"("Functional.conv2d.0.forward.output.0")"), std::string::npos);
  const DbNode& golden = ours.at({"Bench", "Functional.conv2d.0.forward"});
  EXPECT_NE(golden.input.find(R"("Max": )"), std::string::npos);
  EXPECT_EQ(golden.input.find(R"("Status": )"), std::string::npos);
}

TEST(GraphBuild, NodeOrderIsPostOrderRootLast) {
  auto ours = read_nodes(resnet_pair_db());
  int64_t max_order = -1;
  for (const auto& [key, n] : ours) {
    if (key.first != "NPU") continue;
    max_order = std::max(max_order, n.order);
    if (!n.up.empty()) {
      EXPECT_LT(n.order, ours.at({"NPU", n.up}).order) << key.second;
    }
  }
  EXPECT_EQ(ours.at({"NPU", "DefaultModel"}).order, max_order);
}

TEST(GraphBuild, FileCarriesFindingsAndMsprobesTables) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(resnet_pair_db().c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    std::string v;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(one("SELECT count(*) FROM sqlite_master WHERE type='index' AND name LIKE 'index%'"),
            "6");
  EXPECT_EQ(one("SELECT graph_type || ' ' || task || ' ' || rank_list || step_list FROM tb_config"),
            "compare summary [0][0]");
  // msprobe's bins, edges written as decimals (a regression: 3 * 0.2 printed as
  // 0.6000000000000001).
  const std::string colors = one("SELECT node_colors FROM tb_config");
  EXPECT_NE(colors.find(R"("#FFDC7F": {"value": [0.4, 0.6])"), std::string::npos) << colors;
  EXPECT_NE(colors.find(R"("#C7C7C7": {"value": [])"), std::string::npos) << colors;
  const std::string findings = one("SELECT value FROM numprobe_meta WHERE key='findings'");
  EXPECT_NE(
      findings.find(
          R"("0/0": {"first_divergence": {"node": "Functional.conv2d.0.forward", "side": "target")"),
      std::string::npos)
      << findings;
  EXPECT_EQ(one("SELECT count(*) FROM tb_stack WHERE id NOT LIKE 'NPU_0_0_%' AND id NOT LIKE "
                "'Bench_0_0_%'"),
            "0");
  sqlite3_close(db);
}

// A rank directory with the given dump.json data and construct.json.
std::string make_dump(const std::string& name, const std::string& data,
                      const std::string& construct) {
  const std::string dir = scratch_dir(name) + "/step0/rank0";
  std::filesystem::create_directories(dir);
  write_file(
      dir + "/dump.json",
      R"({"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {)" +
          data + "}}");
  if (!construct.empty()) write_file(dir + "/construct.json", construct);
  return dir;
}

std::string tensor(double v) {
  const std::string s = std::to_string(v);
  return R"({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": )" + s +
         R"(, "Min": )" + s + R"(, "Mean": )" + s + R"(, "Norm": )" + s +
         R"(, "requires_grad": false})";
}

std::string api(const std::string& name, double v) {
  return "\"" + name + R"(": {"input_args": [)" + tensor(v) +
         R"(], "input_kwargs": {}, "output": [)" + tensor(v) + "]}";
}

TEST(GraphBuild, WithoutConstructApisHangFromAFlatRootAndANoteSaysSo) {
  const std::string dir =
      make_dump("graph_l1",
                api("Torch.add.0.forward", 1) + ", " + api("Torch.mul.0.forward", 2) + ", " +
                    api("Torch.sub.0.forward", 3),
                "");
  GraphRunOptions o;
  o.target = dir;
  o.out = dir + "/out.vis.db";
  GraphRunResult r = run_graph(o);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("L1"), std::string::npos);
  auto nodes = read_nodes(r.path);
  EXPECT_EQ(nodes.at({"NPU", "Apis_Between_Modules.0"}).subs,
            R"(["Torch.add.0.forward", "Torch.mul.0.forward", "Torch.sub.0.forward"])");
  EXPECT_EQ(nodes.at({"NPU", "Apis_Between_Modules.0"}).type, "9");
  EXPECT_EQ(nodes.at({"NPU", "Torch.add.0.forward"}).link, "[]");
}

TEST(GraphBuild, ConstructCyclesAndForwardReferencesStayReachable) {
  // B is named as A's parent before B's own line, A and C claim each other, D has an unknown
  // parent that never gets a line of its own.
  const std::string dir =
      make_dump("graph_cycle", api("Torch.add.0.forward", 1),
                R"({"Module.a.A.forward.0": "Module.b.B.forward.0", "Module.b.B.forward.0": null,
                    "Module.c.C.forward.0": "Module.e.E.forward.0", "Module.e.E.forward.0": "Module.c.C.forward.0",
                    "Torch.add.0.forward": "Module.x.X.forward.0"})");
  GraphRunOptions o;
  o.target = dir;
  o.out = dir + "/out.vis.db";
  auto nodes = read_nodes(run_graph(o).path);
  EXPECT_EQ(nodes.size(), 7u);  // the root, six named nodes: every one written (reachable)
  EXPECT_EQ(nodes.at({"NPU", "Module.a.A.forward.0"}).up, "Module.b.B.forward.0");
  EXPECT_EQ(nodes.at({"NPU", "Module.b.B.forward.0"}).up, "DefaultModel");
  EXPECT_EQ(nodes.at({"NPU", "Torch.add.0.forward"}).up, "Module.x.X.forward.0");
  EXPECT_EQ(nodes.at({"NPU", "Module.x.X.forward.0"}).up, "DefaultModel");
  const std::string c_up = nodes.at({"NPU", "Module.c.C.forward.0"}).up;
  const std::string e_up = nodes.at({"NPU", "Module.e.E.forward.0"}).up;
  EXPECT_TRUE(c_up == "DefaultModel" || e_up == "DefaultModel") << c_up << " " << e_up;
}

TEST(GraphBuild, InplaceBackwardTakesItsForwardTwinsParent) {
  // relu is in-place: the backward hook of block.conv never fired inside block, so construct.json
  // puts conv's backward under relu's backward; the forward twin says it belongs to block.
  const std::string dir = make_dump(
      "graph_inplace", api("Torch.add.0.forward", 1),
      R"({"Module.block.Block.forward.0": null, "Module.block.conv.Conv2d.forward.0": "Module.block.Block.forward.0",
          "Module.relu.ReLU.forward.0": null,
          "Module.relu.ReLU.backward.0": null, "Module.block.Block.backward.0": null,
          "Module.block.conv.Conv2d.backward.0": "Module.relu.ReLU.backward.0",
          "Module.head.Linear.backward.0": null, "Module.head.Linear.forward.0": "Module.block.Block.forward.0"})");
  GraphRunOptions o;
  o.target = dir;
  o.out = dir + "/out.vis.db";
  auto nodes = read_nodes(run_graph(o).path);
  EXPECT_EQ(nodes.at({"NPU", "Module.block.conv.Conv2d.backward.0"}).up,
            "Module.block.Block.backward.0");
  // A backward node without a parent takes the backward twin of its forward call's parent.
  EXPECT_EQ(nodes.at({"NPU", "Module.head.Linear.backward.0"}).up, "Module.block.Block.backward.0");
}

TEST(GraphBuild, MicroStepsSplitAtAForwardAfterABackward) {
  const std::string dir = make_dump("graph_micro", api("Torch.add.0.forward", 1),
                                    R"({"Module.m.M.forward.0": null, "Module.m.M.backward.0": null,
          "Module.m.M.forward.1": null, "Module.m.M.backward.1": null})");
  RankLocation w = find_rank_dumps(dir).at(0);
  auto gp = single_graph(w);
  const Graph& g = gp->target.graph;
  EXPECT_EQ(g.micro_steps, 2);
  EXPECT_EQ(g.nodes[g.find("Module.m.M.backward.0")].micro_step, 0);
  EXPECT_EQ(g.nodes[g.find("Module.m.M.forward.1")].micro_step, 1);
}

TEST(GraphBuild, CrossFrameworkPairMatchesThroughCompareMappings) {
  // MindSpore Cells against PyTorch Modules: the layer mapping that pairs compare rows pairs the
  // graph nodes too (no second matcher).
  MappingOptions mo;
  mo.layer_mapping = msprobe_fixture("cross_framework_ms_vs_pt/layer_mapping.yaml");
  const CompareMappings m = load_compare_mappings(mo);
  GraphRunOptions o;
  o.target = msprobe_fixture("cross_framework_ms_vs_pt/mindspore_data");
  o.golden = msprobe_fixture("cross_framework_ms_vs_pt/pytorch_data");
  o.mappings = &m;
  o.out = scratch_dir("graph_ms_pt") + "/x.vis.db";
  auto nodes = read_nodes(run_graph(o).path);
  size_t matched_cells = 0;
  for (const auto& [key, n] : nodes) {
    if (key.first == "NPU" && key.second.rfind("Cell.", 0) == 0 && n.link != "[]") {
      ++matched_cells;
      EXPECT_NE(n.link.find("Module."), std::string::npos) << key.second << " " << n.link;
    }
  }
  EXPECT_GT(matched_cells, 0u);
}

TEST(GraphBuild, CompareJsonParallelMergeIsReadAndFlagged) {
  CompareInput in = parse_compare_input(
      R"({"npu_path": "a", "parallel_merge": {"npu": {"rank_size": 2, "tp": 2, "pp": 1}}})",
      "c.json", true);
  EXPECT_TRUE(in.parallel_merge);
  EXPECT_TRUE(in.golden.empty());
  EXPECT_THROW(parse_compare_input(R"({"npu_path": "a"})", "c.json"), InputError);
  EXPECT_THROW(parse_compare_input(R"({"npu_path": "a", "parallel_merge": 3})", "c.json", true),
               InputError);
}

}  // namespace
}  // namespace numprobe::graph
