// Directories: safetensors shards with an index (and missing shards), .npy trees.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ckpt/checkpoint.h"
#include "ckpt_test_util.h"
#include "core/npy.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

using testutil::f32_safetensors;

std::string sharded(const std::string& name) {
  const std::string dir = testing::scratch_dir(name);
  testing::write_file(dir + "/model-00001-of-00002.safetensors",
                      f32_safetensors({{"a", {1, 2}}, {"b", {3}}}));
  testing::write_file(dir + "/model-00002-of-00002.safetensors", f32_safetensors({{"c", {4}}}));
  testing::write_file(
      dir + "/model.safetensors.index.json",
      R"({"metadata": {"total_size": 16}, "weight_map": {)"
      R"("a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",)"
      R"("c": "model-00002-of-00002.safetensors"}})");
  return dir;
}

TEST(DirectoryCheckpoint, ShardsWithIndex) {
  const Checkpoint c = Checkpoint::open(sharded("shards"));
  EXPECT_EQ(c.kind(), "sharded checkpoint");
  EXPECT_EQ(c.tensors().size(), 3u);
}

TEST(DirectoryCheckpoint, MissingShardIsAClearError) {
  const std::string dir = sharded("shards_missing");
  std::filesystem::remove(dir + "/model-00002-of-00002.safetensors");
  try {
    Checkpoint::open(dir);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.file().find("model.safetensors.index.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("shard model-00002-of-00002.safetensors is missing"),
              std::string::npos);
  }
}

TEST(DirectoryCheckpoint, IndexThatLiesAboutAShard) {
  const std::string dir = sharded("shards_lie");
  testing::write_file(dir + "/model-00002-of-00002.safetensors", f32_safetensors({{"d", {4}}}));
  EXPECT_THROW(Checkpoint::open(dir), InputError);
}

TEST(DirectoryCheckpoint, ShardsWithoutIndexAndDuplicates) {
  const std::string dir = testing::scratch_dir("shards_noindex");
  testing::write_file(dir + "/x.safetensors", f32_safetensors({{"a", {1}}}));
  testing::write_file(dir + "/y.safetensors", f32_safetensors({{"b", {1}}}));
  EXPECT_EQ(Checkpoint::open(dir).tensors().size(), 2u);
  testing::write_file(dir + "/z.safetensors", f32_safetensors({{"a", {1}}}));
  EXPECT_THROW(Checkpoint::open(dir), InputError);
}

TEST(DirectoryCheckpoint, NpyTree) {
  const std::string dir = testing::scratch_dir("npy_tree");
  std::filesystem::create_directories(dir + "/layer1");
  const float v[3] = {1, 2, 3};
  write_npy(dir + "/layer1/weight.npy", v, DType::kF32, {3});
  write_npy(dir + "/bias.npy", v, DType::kF32, {1, 3});
  const Checkpoint c = Checkpoint::open(dir);
  EXPECT_EQ(c.kind(), "npy directory");
  ASSERT_EQ(c.tensors().size(), 2u);
  EXPECT_EQ(c.tensors()[0].name, "bias");
  EXPECT_EQ(c.tensors()[1].name, "layer1/weight");
  EXPECT_EQ(c.tensors()[1].count, 3u);
}

TEST(DirectoryCheckpoint, EmptyDirectoryAndMissingPath) {
  EXPECT_THROW(Checkpoint::open(testing::scratch_dir("empty_ckpt")), InputError);
  EXPECT_THROW(Checkpoint::open("/nonexistent/ckpt.safetensors"), InputError);
}

}  // namespace
}  // namespace numprobe::ckpt
