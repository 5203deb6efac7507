// The strict YAML subset behind the mapping files, and the four file readers on top of it:
// msprobe's own files parse, everything outside the subset is refused with file, line and cause.
#include <gtest/gtest.h>

#include <functional>

#include "compare/yaml_subset.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/error.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_file;
namespace y = numprobe::compare_yaml;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(YamlSubset, NestedMapsListsAndScalars) {
  const y::Node n = y::parse(
      "# comment\n"
      "top:\n"
      "  a: 1   # trailing comment\n"
      "  'b c': \"x\\ty\"\n"
      "  d: it's\n"
      "list:\n"
      "- p: 1\n"
      "  q: [0, 'a,b', \"c\"]\n"
      "-   r:\n"
      "      - 5\n"
      "- plain\n"
      "empty: {}\n"
      "nothing:\n",
      "t.yaml");
  ASSERT_EQ(n.kind, y::Node::kMap);
  ASSERT_EQ(n.map.size(), 4u);
  const y::Node& top = n.map[0].second;
  EXPECT_EQ(top.map[0].second.text, "1");
  EXPECT_EQ(top.map[1].first, "b c");
  EXPECT_EQ(top.map[1].second.text, "x\ty");
  EXPECT_EQ(top.map[2].second.text, "it's");
  const y::Node& list = n.map[1].second;
  ASSERT_EQ(list.kind, y::Node::kList);
  ASSERT_EQ(list.list.size(), 3u);
  EXPECT_EQ(list.list[0].map[1].first, "q");
  const y::Node& q = list.list[0].map[1].second;
  ASSERT_EQ(q.list.size(), 3u);
  EXPECT_EQ(q.list[1].text, "a,b");
  EXPECT_EQ(list.list[1].map[0].second.list[0].text, "5");
  EXPECT_EQ(list.list[2].text, "plain");
  EXPECT_EQ(n.map[2].second.kind, y::Node::kMap);
  EXPECT_TRUE(n.map[3].second.null);
  EXPECT_EQ(list.list[0].line, 7);
}

TEST(YamlSubset, BomCrlfAndDocumentMarkers) {
  const y::Node n = y::parse("\xEF\xBB\xBF---\r\na: b\r\n...\r\nnot: [read\r\n", "w.yaml");
  ASSERT_EQ(n.map.size(), 1u);
  EXPECT_EQ(n.map[0].second.text, "b");
  EXPECT_EQ(y::parse("# only a comment\n", "c.yaml").map.size(), 0u);
  EXPECT_EQ(y::parse("{}\n", "e.yaml").kind, y::Node::kMap);
}

TEST(YamlSubset, RefusesWhatItDoesNotSupport) {
  const struct {
    const char* text;
    const char* what;
  } cases[] = {
      {"a: 1\na: 2\n", "line 2, column 1: duplicate key 'a' (first on line 1)"},
      {"a:\n\tb: 1\n", "line 2, column 1: tab in indentation"},
      {"a: &x 1\n", "anchors and aliases"},
      {"a: *x\n", "anchors and aliases"},
      {"a: !tag 1\n", "tags are not supported"},
      {"a: |\n  text\n", "block scalars"},
      {"a: {b: 1}\n", "flow maps are not supported"},
      {"a: 'open\n", "line 1, column 1: unterminated quoted scalar"},
      {"a: [1, [2]]\n", "nested flow collections"},
      {"a: [1, , 2]\n", "empty item in a flow list"},
      {"a: b: c\n", "': ' inside a value"},
      {"a: 1\n  b: 2\n", "line 2, column 3: unexpected indentation"},
      {"- a\nb: 1\n", "line 2, column 1: unexpected content after the document"},
      {"a: \"\\q\"\n", "unsupported escape"},
      {"just text\n", "line 1, column 1: expected 'key: value'"},
      {"--- \n---\na: 1\n", "more than one document"},
      {"%YAML 1.2\n", "directives"},
      {"a: 1\x01\n", "control character"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { y::parse(c.text, "bad.yaml"); });
    EXPECT_NE(e.find("bad.yaml: "), std::string::npos) << c.text << " -> " << e;
    EXPECT_NE(e.find(c.what), std::string::npos) << c.text << " -> " << e;
  }
}

TEST(YamlSubset, QuoteReadsBackAsTheSameString) {
  const std::string samples[] = {"Tensor.__add__.0.forward.input.0",
                                 "N/A",
                                 "<class 'int'>",
                                 "a: b",
                                 "#x",
                                 "- item",
                                 "null",
                                 "123",
                                 "",
                                 " lead",
                                 "tab\there",
                                 "quote\"and\\slash",
                                 "[x]"};
  for (const std::string& s : samples) {
    const y::Node n = y::parse("k: " + y::quote(s) + "\n", "q.yaml");
    ASSERT_EQ(n.map.size(), 1u) << s;
    EXPECT_EQ(n.map[0].second.text, s) << y::quote(s);
    EXPECT_FALSE(n.map[0].second.null) << s;
  }
  EXPECT_EQ(y::quote("Tensor.__add__.0.forward"), "Tensor.__add__.0.forward");
}

TEST(MappingFiles, ReadsMsprobesOwnFiles) {
  const std::string dm_path =
      msprobe_fixture("golden_compare_outputs_mstt/xf_ms_vs_pt_layer_mapping/data_mapping.yaml");
  const NamePairs dm = parse_data_mapping(read_file(dm_path), dm_path);
  ASSERT_EQ(dm.size(), 44u);
  EXPECT_EQ(dm.front().first, "Tensor.__add__.0.forward.input.0");
  EXPECT_EQ(dm.front().second, "N/A");
  EXPECT_EQ(dm[5].second, "Tensor.__add__.0.forward.input.0");

  const std::string cm_path = msprobe_fixture("configs/cell_mapping.yaml");
  const NamePairs cm = parse_cell_mapping(read_file(cm_path), cm_path);
  ASSERT_EQ(cm.size(), 2u);
  EXPECT_EQ(cm[0], (std::pair<std::string, std::string>{"fc1.Dense", "fc1.Linear"}));

  const std::string lm_path = msprobe_fixture("cross_framework_ms_vs_pt/layer_mapping.yaml");
  const std::vector<LayerRule> lm = parse_layer_mapping(read_file(lm_path), lm_path);
  ASSERT_EQ(lm.size(), 6u);
  EXPECT_EQ(lm[0].type, "TopLayer");
  EXPECT_EQ(lm[2].from, "reduce_from_mp_region.all_reduce");
  EXPECT_EQ(lm[4].to, "core_attention_flash.npu_fusion_attention");
}

TEST(MappingFiles, RoundTripsTheMappingsItWrites) {
  const NamePairs m = {{"Cell.a.Dense.forward.0.input.0", "Module.a.Linear.forward.0.input.0"},
                       {"Tensor.__add__.0.forward.output.0", "N/A"},
                       {"odd: name", "#hash"}};
  EXPECT_EQ(parse_data_mapping(render_mapping_yaml(m), "rt.yaml"), m);
  EXPECT_TRUE(parse_data_mapping(render_mapping_yaml({}), "rt.yaml").empty());
}

TEST(MappingFiles, ApiMappingItems) {
  const auto m = parse_api_mapping(
      "- ms_api: Functional.flash_attention_score\n"
      "  pt_api: NPU.npu_fusion_attention\n"
      "  ms_args: [0, 1, 2, 3]\n"
      "  pt_args: [0, 1, 2, 3]\n"
      "  ms_outputs:\n"
      "  - 0\n"
      "  pt_outputs: [0]\n"
      "- ms_api: Mint.add\n"
      "  pt_api: Torch.add\n"
      "  ms_args: [1, 0]\n"
      "  pt_args: [0, 1]\n",
      "am.yaml");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].ms_outputs, std::vector<std::string>{"0"});
  EXPECT_EQ(m[1].ms_args, (std::vector<std::string>{"1", "0"}));
  EXPECT_EQ(m[1].line, 8);
}

TEST(MappingFiles, WrongShapesNameFileAndLine) {
  const struct {
    std::function<void(const std::string&)> parse;
    const char* text;
    const char* what;
  } cases[] = {
      {[](const std::string& t) { parse_data_mapping(t, "f.yaml"); }, "- a\n- b\n",
       "line 1: a data mapping (target row: golden row) must be a map, not a list"},
      {[](const std::string& t) { parse_data_mapping(t, "f.yaml"); }, "a: b\nc:\n",
       "line 2: the value of 'c' must be a non-empty scalar, not empty"},
      {[](const std::string& t) { parse_cell_mapping(t, "f.yaml"); }, "a:\n  b: c\n",
       "line 2: the value of 'a' must be a non-empty scalar, not a map"},
      {[](const std::string& t) { parse_api_mapping(t, "f.yaml"); }, "a: b\n",
       "line 1: an api mapping must be a list"},
      {[](const std::string& t) { parse_api_mapping(t, "f.yaml"); },
       "- ms_api: A.x\n  pt_api: B.y\n  ms_args: [0, 1]\n  pt_args: [0]\n",
       "line 1: ms_args and pt_args differ in length (2 vs 1)"},
      {[](const std::string& t) { parse_api_mapping(t, "f.yaml"); },
       "- ms_api: A.x\n  pt_api: B.y\n  ms_arg: [0]\n", "line 3: unknown key 'ms_arg'"},
      {[](const std::string& t) { parse_api_mapping(t, "f.yaml"); }, "- ms_api: A.x\n",
       "line 1: an api mapping item needs both ms_api and pt_api"},
      {[](const std::string& t) { parse_layer_mapping(t, "f.yaml"); }, "TopLayer: x\n",
       "line 1: the rules of layer 'TopLayer' must be a map"},
      {[](const std::string& t) { parse_layer_mapping(t, "f.yaml"); }, "L:\n  a..b: c\n",
       "line 2: 'a..b' is not a dotted scope path"},
      // Regression (found by mapping_yaml_fuzz): an empty key read front() of an empty string.
      {[](const std::string& t) { parse_layer_mapping(t, "f.yaml"); }, "L:\n  \"\": c\n",
       "line 2: '' is not a dotted scope path"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { c.parse(c.text); });
    EXPECT_NE(e.find(std::string("f.yaml: ") + c.what), std::string::npos) << c.text << " -> " << e;
  }
}

TEST(MappingFiles, LegacyCellRootReplacesTopLayer) {
  const auto rules = parse_layer_mapping("TopLayer:\n  a: b\nCell:\n  c: d\nX:\n  e: f\n", "l");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].type, "TopLayer");
  EXPECT_EQ(rules[0].from, "c");
  EXPECT_EQ(rules[1].type, "X");
}

TEST(MappingFiles, LoadChecksFilesAndCombinations) {
  MappingOptions o;
  o.layer_mapping = "";
  o.api_mapping = "";
  EXPECT_THROW(load_compare_mappings(o), Error);
  MappingOptions missing;
  missing.data_mapping = "/nonexistent/dm.yaml";
  const std::string e = error_of([&] { load_compare_mappings(missing); });
  EXPECT_NE(e.find("/nonexistent/dm.yaml"), std::string::npos) << e;
  MappingOptions flags;
  flags.cell_mapping = "";
  flags.api_mapping = "";
  const CompareMappings m = load_compare_mappings(flags);
  EXPECT_TRUE(m.cell && m.api && !m.layer && m.data.empty() && m.any());
  EXPECT_FALSE(load_compare_mappings({}).any());
}

TEST(BuiltinApiTable, MintPrefixesAndRenamedOps) {
  EXPECT_EQ(builtin_pt_api("Mint.cos"), "Torch.cos");
  EXPECT_EQ(builtin_pt_api("MintFunctional.relu"), "Functional.relu");
  EXPECT_EQ(builtin_pt_api("Functional.add"), "Torch.add");
  EXPECT_EQ(builtin_pt_api("Functional.less_equal"), "Torch.le");
  EXPECT_EQ(builtin_pt_api("Functional.dense"), "Functional.linear");
  EXPECT_EQ(builtin_pt_api("Tensor.asnumpy"), "Tensor.numpy");
  // Same name in both frameworks, or unknown: nothing to rename.
  EXPECT_EQ(builtin_pt_api("Functional.relu"), "");
  EXPECT_EQ(builtin_pt_api("Tensor.add"), "");
  EXPECT_EQ(builtin_pt_api("Functional.flash_attention_score"), "");
}

}  // namespace
