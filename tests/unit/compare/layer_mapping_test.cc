// Layer mapping (-lm) against the results msprobe's own unit test expects for the MindSpore vs
// PyTorch Megatron layer in ../shared/fixtures/msprobe/cross_framework_ms_vs_pt, and on the
// smaller layer_mapping_min pair.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/json_cursor.h"
#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_file;

namespace {

RankDump load(const std::string& rel) {
  return load_rank_dump(find_rank_dumps(msprobe_fixture(rel)).at(0));
}

// A flat JSON object of strings, in file order.
NamePairs read_json_pairs(const std::string& path) {
  const std::string text = read_file(path);
  base::JsonCursor c(text.data(), text.size(), path);
  c.begin_object();
  NamePairs out;
  std::string_view k;
  while (c.next_key(k)) {
    std::string key(k);
    out.emplace_back(key, std::string(c.read_string()));
  }
  return out;
}

std::vector<LayerRule> rules(const std::string& rel) {
  const std::string p = msprobe_fixture(rel);
  return parse_layer_mapping(read_file(p), p);
}

TEST(LayerMapping, ReproducesMsprobesExpectedApiAndDataMappings) {
  const RankDump ms = load("cross_framework_ms_vs_pt/mindspore_data");
  const RankDump pt = load("cross_framework_ms_vs_pt/pytorch_data");
  const NamePairs api =
      layer_mapping_entries(ms, pt, rules("cross_framework_ms_vs_pt/layer_mapping.yaml"));
  const NamePairs want_api =
      read_json_pairs(msprobe_fixture("cross_framework_ms_vs_pt/expected_api_mapping.json"));
  ASSERT_EQ(want_api.size(), 13u);
  EXPECT_EQ(api, want_api);

  const NamePairs data =
      data_mapping_of(api, ms.dump, pt.dump, flatten_rows(ms.dump), flatten_rows(pt.dump));
  const NamePairs want_data =
      read_json_pairs(msprobe_fixture("cross_framework_ms_vs_pt/expected_data_mapping.json"));
  ASSERT_EQ(want_data.size(), 44u);
  EXPECT_EQ(data, want_data);

  // msprobe wrote the same rows as data_mapping.yaml in its layer-mapping compare.
  const std::string yaml_path =
      msprobe_fixture("golden_compare_outputs_mstt/xf_ms_vs_pt_layer_mapping/data_mapping.yaml");
  EXPECT_EQ(parse_data_mapping(read_file(yaml_path), yaml_path), data);
}

TEST(LayerMapping, EachRuleIsNeeded) {
  const RankDump ms = load("cross_framework_ms_vs_pt/mindspore_data");
  const RankDump pt = load("cross_framework_ms_vs_pt/pytorch_data");
  // Without rules, nothing under the model pairs: its root is network_with_loss on one side and
  // module on the other. Only calls outside every module (TopLayer) can.
  size_t paired = 0;
  for (const auto& [t, g] : layer_mapping_entries(ms, pt, {})) {
    if (g == "N/A") continue;
    ++paired;
    EXPECT_NE(t.rfind("Cell.", 0), 0u) << t;
    const auto parent = ms.construct->parent_of(t);
    EXPECT_TRUE(!parent || parent->empty()) << t << " -> " << g;
  }
  EXPECT_EQ(paired, 1u);  // Tensor.__add__.1
  // Dropping the two-level rule (reduce_from_mp_region.all_reduce: all_reduce) leaves the
  // collective unpaired and changes nothing else.
  std::vector<LayerRule> r = rules("cross_framework_ms_vs_pt/layer_mapping.yaml");
  const NamePairs all = layer_mapping_entries(ms, pt, r);
  r.erase(std::remove_if(r.begin(), r.end(),
                         [](const LayerRule& x) { return x.from.find('.') != std::string::npos; }),
          r.end());
  const NamePairs fewer = layer_mapping_entries(ms, pt, r);
  ASSERT_EQ(all.size(), fewer.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].first == "Distributed.all_reduce.0.forward") {
      EXPECT_EQ(all[i].second, "Distributed.all_reduce.0.forward");
      EXPECT_EQ(fewer[i].second, "N/A");
    } else {
      EXPECT_EQ(all[i], fewer[i]);
    }
  }
}

TEST(LayerMapping, MinimalPairWithoutStackJson) {
  const RankDump ms = load("layer_mapping_min/mindspore");
  const RankDump pt = load("layer_mapping_min/pytorch");
  ASSERT_FALSE(ms.stack.has_value());
  const NamePairs api =
      layer_mapping_entries(ms, pt, rules("layer_mapping_min/layer_mapping.yaml"));
  ASSERT_EQ(api.size(), 1u);
  EXPECT_EQ(api[0].second,
            "Module.module.module.language_model.embedding.word_embeddings.VocabParallelEmbedding."
            "forward.0");
  // The root rename is what pairs them.
  EXPECT_EQ(layer_mapping_entries(ms, pt, {})[0].second, "N/A");

  // Through compare: every row mapped, no dtype warning for Int32 vs torch.int64 (-lm rows are a
  // data mapping, which msprobe compares whatever the dtypes).
  PairResult p;
  p.target = load("layer_mapping_min/mindspore");
  p.golden = load("layer_mapping_min/pytorch");
  CompareMappings m;
  m.layer = true;
  m.layers = rules("layer_mapping_min/layer_mapping.yaml");
  compare_pair(p, &m);
  ASSERT_EQ(p.rows.size(), 2u);
  for (const RowResult& r : p.rows) {
    EXPECT_EQ(r.pair.how, MatchKind::kMapped);
    EXPECT_NE(r.reason, "dtype_mismatch");
  }
  EXPECT_EQ(p.generated_mappings.data.size(), 2u);
  EXPECT_EQ(p.generated_mappings.api, api);
}

TEST(LayerMapping, RenumbersParallelTransformerLayersAndFollowsBackward) {
  // MindSpore numbers pipeline-stage layers globally (layers.4, layers.5), PyTorch per stage
  // (layers.0, layers.1); a backward entry takes its forward's scope.
  auto dump = [](const char* fw, const char* top, const char* cls, int first) {
    std::string j = std::string(R"({"task": "statistics", "level": "mix", "framework": ")") + fw +
                    R"(", "dump_data_dir": null, "data": {)";
    const std::string t = std::string(R"({"type": ")") + fw +
                          R"(.Tensor", "dtype": "Float32", "shape": [2], "Max": 1, "Min": 0,
                          "Mean": 0.5, "Norm": 1})";
    const std::string enc = std::string(top) + ".model.encoder";
    j += "\"" + std::string(top) +
         ".model.encoder.ParallelTransformer.forward.0\": {\"input_args\": [" + t +
         "], \"output\": [" + t + "]}";
    for (int k = 0; k < 2; ++k) {
      const std::string layer = enc + ".layers." + std::to_string(first + k);
      j += ", \"" + layer + "." + cls + ".forward.0\": {\"input_args\": [" + t +
           "], \"output\": [" + t + "]}";
    }
    j += ", \"Functional.gelu.0.forward\": {\"input_args\": [" + t + "], \"output\": [" + t + "]}";
    j += ", \"Functional.gelu.0.backward\": {\"input\": [" + t + "], \"output\": [" + t + "]}";
    j += "}}";
    return j;
  };
  RankDump ms, pt;
  ms.dump = parse_dump_json(dump("mindspore", "Cell.net", "Layer", 4), "ms.json");
  pt.dump = parse_dump_json(dump("pytorch", "Module.net", "Layer", 0), "pt.json");
  const std::string cms =
      R"({"Functional.gelu.0.forward": "Cell.net.model.encoder.layers.5.Layer.forward.0"})";
  const std::string cpt =
      R"({"Functional.gelu.0.forward": "Module.net.model.encoder.layers.1.Layer.forward.0"})";
  ms.construct = parse_construct_json(cms, "ms-construct.json");
  pt.construct = parse_construct_json(cpt, "pt-construct.json");
  const NamePairs api = layer_mapping_entries(ms, pt, {});
  ASSERT_EQ(api.size(), 5u);
  EXPECT_EQ(api[0].second, "Module.net.model.encoder.ParallelTransformer.forward.0");
  EXPECT_EQ(api[1].second, "Module.net.model.encoder.layers.0.Layer.forward.0");
  EXPECT_EQ(api[2].second, "Module.net.model.encoder.layers.1.Layer.forward.0");
  EXPECT_EQ(api[3].second, "Functional.gelu.0.forward");
  EXPECT_EQ(api[4].second, "Functional.gelu.0.backward");
}

}  // namespace
