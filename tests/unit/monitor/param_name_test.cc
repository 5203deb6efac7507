#include <gtest/gtest.h>

#include "monitor/param_name.h"

namespace numprobe::monitor {
namespace {

// Expected values are what msprobe's squash_param_name (re.findall over its five patterns) gives.
TEST(ParamName, SquashKeepsWhatFollowsTheFirstMatchingContainer) {
  EXPECT_EQ(squash_param_name("module.language_model.encoder.layers.0.mlp.weight", true),
            "layers.0.mlp.weight");
  EXPECT_EQ(squash_param_name("model.layer.3.bias", true), "layer.3.bias");
  EXPECT_EQ(squash_param_name("model.embedding.word_embeddings.weight", true),
            "embedding.word_embeddings.weight");
  EXPECT_EQ(squash_param_name("gpt.decoder.final_layernorm.weight", true),
            "final_layernorm.weight");
  EXPECT_EQ(squash_param_name("m.output_layer.weight", true), "output_layer.weight");
  EXPECT_EQ(squash_param_name("m.norm1.weight", true), "norm1.weight");
}

TEST(ParamName, PatternOrderAndGreedPickTheContainer) {
  // The greedy prefix keeps the last "layers." in the name.
  EXPECT_EQ(squash_param_name("a.layers.0.b.layers.1.w", true), "layers.1.w");
  // "layers" is tried before "norm", wherever each sits.
  EXPECT_EQ(squash_param_name("m.norm.layers.0.w", true), "layers.0.w");
  EXPECT_EQ(squash_param_name("m.layers.0.norm.w", true), "layers.0.norm.w");
}

TEST(ParamName, UnmatchedOrDisabledNamesStay) {
  EXPECT_EQ(squash_param_name("fc1.weight", true), "fc1.weight");
  EXPECT_EQ(squash_param_name("layers.0.weight", true), "layers.0.weight");  // no dot before
  EXPECT_EQ(squash_param_name("m.layers.0.w", false), "m.layers.0.w");
  EXPECT_EQ(squash_param_name("", true), "");
}

}  // namespace
}  // namespace numprobe::monitor
