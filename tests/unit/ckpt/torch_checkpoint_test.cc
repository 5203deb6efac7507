// torch.save state dicts and Megatron trees (seeds written by torch 1.13, tests/fuzz/seeds/
// pt_state_dict): tensors by key path, the other objects as placeholders, refused callables.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "ckpt/checkpoint.h"
#include "ckpt_test_util.h"
#include "core/pt.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

namespace fs = std::filesystem;
using testutil::seed;

const TensorEntry* find(const Checkpoint& c, const std::string& name) {
  for (const TensorEntry& t : c.tensors())
    if (t.name == name) return &t;
  return nullptr;
}

TEST(TorchCheckpoint, StateDict) {
  const Checkpoint c = Checkpoint::open(seed("pt_state_dict/state_dict.pt"));
  EXPECT_EQ(c.kind(), "torch.save");
  ASSERT_EQ(c.tensors().size(), 4u);
  std::vector<uint8_t> scratch;
  const TensorEntry* w = find(c, "fc.weight");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(static_cast<const float*>(c.data(*w, scratch))[5], 5.0f);
  // A transposed bf16 view comes out row-major: emb.weight = arange(12).reshape(3, 4).t().
  const TensorEntry* e = find(c, "emb.weight");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->pt_view);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{4, 3}));
  const auto* bits = static_cast<const uint16_t*>(c.data(*e, scratch));
  EXPECT_EQ(bf16_to_float(bits[1]), 4.0f);  // [0][1] = original [1][0]
  ASSERT_TRUE(find(c, "step"));
  EXPECT_EQ(find(c, "step")->dtype, DType::kI64);
  EXPECT_TRUE(c.placeholders().empty());
}

TEST(TorchCheckpoint, MegatronFileKeepsNamespaceAsPlaceholder) {
  const std::string b = testing::read_file(seed("pt_state_dict/megatron_rank.pt"));
  const PtStateDict sd =
      parse_pt_state_dict(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "m.pt");
  bool args = false;
  for (const PtPlaceholder& p : sd.placeholders)
    if (p.name == "args" && p.klass == "argparse.Namespace") args = true;
  EXPECT_TRUE(args);
  std::vector<std::string> names;
  for (const PtNamedTensor& t : sd.tensors) names.push_back(t.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "model.decoder.weight"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "optimizer.state.0.exp_avg"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "rng_state.0.torch_rng_state"), names.end());
}

TEST(TorchCheckpoint, RefusesCallablesOutsideTheSubset) {
  std::string b = testing::read_file(seed("pt_state_dict/megatron_rank.pt"));
  const size_t at = b.find("argparse\nNamespace");
  ASSERT_NE(at, std::string::npos);
  b.replace(at, 8, "__main__");  // a class of the saving script: torch.load would import it
  try {
    parse_pt_state_dict(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "m.pt");
    FAIL() << "accepted __main__.Namespace";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported object __main__.Namespace"),
              std::string::npos);
    EXPECT_EQ(e.file(), "m.pt");
  }
}

std::string megatron_tree(const std::string& name, const std::string& seed_file,
                          const std::vector<std::string>& ranks, const std::string& latest) {
  const std::string dir = testing::scratch_dir(name);
  testing::write_file(dir + "/latest_checkpointed_iteration.txt", latest + "\n");
  for (const std::string& r : ranks) {
    fs::create_directories(dir + "/iter_0000010/" + r);
    fs::copy_file(seed("pt_state_dict/" + seed_file),
                  dir + "/iter_0000010/" + r + "/model_optim_rng.pt");
  }
  return dir;
}

TEST(TorchCheckpoint, MegatronTree) {
  const std::string dir = megatron_tree("megatron_one", "megatron_rank.pt", {"mp_rank_00"}, "10");
  const Checkpoint c = Checkpoint::open(dir);
  EXPECT_EQ(c.kind(), "Megatron");
  ASSERT_EQ(c.tensors().size(), 2u);  // the model only, named as msprobe does: key.<vpp stage>
  EXPECT_TRUE(find(c, "decoder.weight.0"));
  EXPECT_TRUE(find(c, "decoder.bias.0"));
  EXPECT_FALSE(c.placeholders().empty());
  // The iteration directory and the rank directory open the same way.
  EXPECT_EQ(Checkpoint::open(dir + "/iter_0000010").tensors().size(), 2u);
  EXPECT_EQ(Checkpoint::open(dir + "/iter_0000010/mp_rank_00").tensors().size(), 2u);
}

TEST(TorchCheckpoint, MegatronVirtualStagesAndRanks) {
  const std::string dir =
      megatron_tree("megatron_vpp", "megatron_vpp.pt", {"mp_rank_00_000", "mp_rank_00_001"}, "10");
  const Checkpoint c = Checkpoint::open(dir);
  EXPECT_TRUE(find(c, "mp_rank_00_000/w.0"));
  EXPECT_TRUE(find(c, "mp_rank_00_001/w.1"));
  EXPECT_EQ(c.tensors().size(), 4u);
}

TEST(TorchCheckpoint, MegatronErrorsNameTheFile) {
  const std::string dir = megatron_tree("megatron_bad", "megatron_rank.pt", {"mp_rank_00"}, "20");
  try {
    Checkpoint::open(dir);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("iter_0000020"), std::string::npos);
  }
  const std::string dir2 =
      megatron_tree("megatron_missing", "megatron_rank.pt", {"mp_rank_00"}, "10");
  fs::create_directories(dir2 + "/iter_0000010/mp_rank_01");
  try {
    Checkpoint::open(dir2);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.file().find("mp_rank_01/model_optim_rng.pt"), std::string::npos);
  }
}

}  // namespace
}  // namespace numprobe::ckpt
