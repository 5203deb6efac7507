// VisDbReader against msprobe's own graph file (golden_graph_mstt: msprobe 8.3.3's compare of two
// ResNet-50 steps) and against damaged inputs.
#include "graph/vis_db_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <set>

#include "numprobe/error.h"
#include "test_support.h"

namespace numprobe::graph {
namespace {

std::string golden_db() {
  return testing::msprobe_fixture("golden_graph_mstt/compare_resnet50_step0_vs_step1.vis.db");
}

GraphKey target() {
  return GraphKey{0, 0, Side::kTarget, std::nullopt};
}
GraphKey golden() {
  return GraphKey{0, 0, Side::kGolden, std::nullopt};
}

TEST(VisDbReader, ConfigOfMsprobesFile) {
  VisDbReader r(golden_db());
  EXPECT_EQ(r.config().graph_type, "compare");
  EXPECT_EQ(r.config().task, "summary");
  EXPECT_EQ(r.config().steps, std::vector<int64_t>{0});
  EXPECT_EQ(r.config().ranks, std::vector<int64_t>{0});
  ASSERT_EQ(r.config().colors.size(), 6u);
  EXPECT_EQ(r.config().colors[0].color, "#FFFCF3");
  EXPECT_FALSE(r.config().colors[5].has_range);  // the grey
  EXPECT_TRUE(r.meta().empty());
  EXPECT_TRUE(r.has_golden());
  EXPECT_TRUE(r.has_graph(0, 0));
  EXPECT_FALSE(r.has_graph(1, 0));
}

TEST(VisDbReader, RootsAndChildrenInExecutionOrder) {
  VisDbReader r(golden_db());
  auto roots = r.children(target(), std::nullopt);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0].name, "DefaultModel");
  EXPECT_EQ(roots[0].type, 0);
  auto top = r.children(target(), std::string("DefaultModel"));
  EXPECT_EQ(static_cast<int64_t>(top.size()), roots[0].children);
  ASSERT_GE(top.size(), 3u);
  EXPECT_EQ(top[0].name, "Apis_Between_Modules.0");
  EXPECT_EQ(top[1].name, "Module.conv1.Conv2d.forward.0");
  EXPECT_EQ(top[2].name, "Module.bn1.BatchNorm2d.forward.0");
  auto conv = r.children(target(), std::string("Module.conv1.Conv2d.forward.0"));
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_EQ(conv[0].name, "Functional.conv2d.0.forward");
  EXPECT_EQ(conv[0].type, 1);
  EXPECT_TRUE(r.children(target(), std::string("no such node")).empty());
  EXPECT_EQ(r.children(golden(), std::nullopt).size(), 1u);
}

TEST(VisDbReader, ColoursFromTheFilesBins) {
  VisDbReader r(golden_db());
  auto conv = r.children(target(), std::string("Module.conv1.Conv2d.forward.0"));
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_EQ(conv[0].precision, 1.0);
  EXPECT_EQ(conv[0].color, "#FF704D");  // the last bin includes its upper bound
  auto add = r.node(target(), "Tensor.add_.0.forward");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->precision, 0.5);
  EXPECT_EQ(add->color, "#FFDC7F");
  // The golden node takes its match's colour.
  auto gadd = r.node(golden(), "Tensor.add_.0.forward");
  ASSERT_TRUE(gadd);
  EXPECT_EQ(gadd->color, "#FFDC7F");
  EXPECT_EQ(r.color_of(0.0), "#FFFCF3");
  EXPECT_EQ(r.color_of(0.2), "#FFEDBE");
  EXPECT_EQ(r.color_of(1.5), "");
  auto unmatched = r.filter_unmatched(target(), 1);
  ASSERT_EQ(unmatched.results.size(), 1u);
  EXPECT_EQ(unmatched.results[0].color, kUnmatchedColor);
  EXPECT_TRUE(unmatched.truncated);
}

TEST(VisDbReader, NodeDetailStatsStackAndChain) {
  VisDbReader r(golden_db());
  auto n = r.node(target(), "Functional.conv2d.0.forward");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->parent_chain,
            (std::vector<std::string>{"DefaultModel", "Module.conv1.Conv2d.forward.0"}));
  EXPECT_EQ(n->matched_link.back(), "Functional.conv2d.0.forward");
  ASSERT_FALSE(n->input.empty());
  EXPECT_EQ(n->input[0].name, "Functional.conv2d.0.forward.input.0");
  EXPECT_EQ(n->input[0].fields[0].first, "type");
  EXPECT_EQ(n->input[0].fields[0].second, "torch.Tensor");
  ASSERT_FALSE(n->output.empty());
  EXPECT_FALSE(n->stack.empty());
  EXPECT_NE(n->stack[0].find("api_registry.py"), std::string::npos);
  EXPECT_FALSE(r.node(target(), "Functional.conv2d.999.forward"));
  EXPECT_FALSE(r.node(GraphKey{5, 0, Side::kTarget, std::nullopt}, "DefaultModel"));
}

TEST(VisDbReader, SearchAndFilters) {
  VisDbReader r(golden_db());
  auto s = r.search(target(), "CONV2D.0", 10);
  ASSERT_FALSE(s.results.empty());
  EXPECT_EQ(s.results[0].name, "Functional.conv2d.0.forward");
  EXPECT_EQ(s.results[0].path.front(), "DefaultModel");
  EXPECT_EQ(s.results[0].path.back(), "Functional.conv2d.0.forward");
  auto many = r.search(target(), "forward", 5);
  EXPECT_EQ(many.results.size(), 5u);
  EXPECT_TRUE(many.truncated);
  auto red = r.filter_color(target(), "#FF704D", 1000);
  ASSERT_FALSE(red.results.empty());
  for (const auto& h : red.results) EXPECT_EQ(h.color, "#FF704D");
  auto gred = r.filter_color(golden(), "#FF704D", 1000);
  EXPECT_FALSE(gred.results.empty());
  EXPECT_TRUE(r.search(target(), "'; DROP TABLE tb_nodes; --", 10).results.empty());
}

TEST(VisDbReader, NotADatabaseNamesTheFile) {
  const std::string dir = testing::scratch_dir("vis_db_reader_bad");
  const std::string bad = dir + "/not_a_db.vis.db";
  testing::write_file(bad, std::string(4096, 'x'));
  try {
    VisDbReader r(bad);
    FAIL() << "opened a text file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not_a_db.vis.db"), std::string::npos) << e.what();
  }
  EXPECT_THROW(VisDbReader(dir + "/missing.vis.db"), InputError);
}

TEST(VisDbReader, MissingTableNamesTheFileAndTable) {
  const std::string dir = testing::scratch_dir("vis_db_reader_table");
  const std::string path = dir + "/no_config.vis.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE tb_nodes (id TEXT); CREATE TABLE tb_stack (id TEXT);", nullptr,
               nullptr, nullptr);
  sqlite3_close(db);
  try {
    VisDbReader r(path);
    FAIL() << "opened a file without tb_config";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no_config.vis.db"), std::string::npos) << what;
    EXPECT_NE(what.find("tb_config"), std::string::npos) << what;
  }
}

TEST(VisDbReader, ReadsNumprobeMeta) {
  const std::string dir = testing::scratch_dir("vis_db_reader_meta");
  const std::string path = dir + "/meta.vis.db";
  std::filesystem::copy_file(golden_db(), path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db,
               "CREATE TABLE numprobe_meta (key TEXT PRIMARY KEY, value TEXT);"
               "INSERT INTO numprobe_meta VALUES ('mode', '\"statistics\"');",
               nullptr, nullptr, nullptr);
  sqlite3_close(db);
  VisDbReader r(path);
  ASSERT_EQ(r.meta().size(), 1u);
  EXPECT_EQ(r.meta()[0].first, "mode");
  EXPECT_EQ(r.meta()[0].second, "\"statistics\"");
}

}  // namespace
}  // namespace numprobe::graph

namespace numprobe::graph {
namespace {

// Regression: msprobe's file is in WAL mode, and opening it read-only used to create -shm and -wal
// files beside it (in the shared fixtures, the first time). The reader must leave the directory as
// it found it, also for a path that needs escaping in an SQLite URI.
TEST(VisDbReader, LeavesNoFilesBesideAWalModeFile) {
  const std::string dir = testing::scratch_dir("vis_db_reader_wal") + "/a dir #1?";
  std::filesystem::create_directories(dir);
  const std::string copy = dir + "/msprobe%20graph.vis.db";
  std::filesystem::copy_file(golden_db(), copy);
  testing::write_file(copy + "-wal", "");  // what a reader that opened it normally leaves behind
  {
    VisDbReader r(copy);
    EXPECT_FALSE(r.children(target(), std::nullopt).empty());
  }
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"msprobe%20graph.vis.db", "msprobe%20graph.vis.db-wal"}));
}

}  // namespace
}  // namespace numprobe::graph
