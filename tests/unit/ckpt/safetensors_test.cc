// The safetensors reader: what a valid file holds, and a clear error for every header that lies.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_compare.h"
#include "ckpt/safetensors.h"
#include "ckpt_test_util.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

using testutil::floats;
using testutil::safetensors_image;

std::vector<TensorEntry> parse(const std::string& img) {
  return parse_safetensors(reinterpret_cast<const uint8_t*>(img.data()), img.size(),
                           "m.safetensors");
}

std::string error_of(const std::string& img) {
  try {
    parse(img);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "m.safetensors");
    return e.what();
  }
  return "";
}

bool says(const std::string& img, const std::string& text) {
  return error_of(img).find(text) != std::string::npos;
}

TEST(Safetensors, ReadsTheSeed) {
  const Checkpoint c = Checkpoint::open(testutil::seed("safetensors/small.safetensors"));
  ASSERT_EQ(c.tensors().size(), 3u);
  EXPECT_EQ(c.kind(), "safetensors");
  const TensorEntry& w = c.tensors()[0];  // data order
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.dtype, DType::kF32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 2}));
  std::vector<uint8_t> scratch;
  // The seed's header length is not a multiple of 4: the data is unaligned, read it bytewise.
  float f[4];
  memcpy(f, c.data(w, scratch), sizeof f);
  EXPECT_EQ(f[3], 4.0f);
  EXPECT_EQ(c.tensors()[1].dtype, DType::kBF16);
  EXPECT_EQ(c.tensors()[2].shape, std::vector<int64_t>{});
  EXPECT_EQ(c.tensors()[2].count, 1u);
}

TEST(Safetensors, UnalignedDataCompares) {
  const Checkpoint c = Checkpoint::open(testutil::seed("safetensors/small.safetensors"));
  const CkptCompareResult r = compare_checkpoints(c, c);
  EXPECT_EQ(r.summary.compared, 3u);
  EXPECT_EQ(r.summary.pass, 3u);
}

TEST(Safetensors, HeaderThatLies) {
  const std::string data = floats({1, 2, 3, 4});
  auto img = [&](const std::string& t) { return safetensors_image("{" + t + "}", data); };
  // Offsets past the data.
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]})"), "truncated"));
  // Shape and offsets disagree.
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]})"),
                   "need 12 bytes, data_offsets span 16"));
  // dtype and offsets disagree.
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F64","shape":[4],"data_offsets":[0,16]})"), "need 32"));
  // Overlap and gap.
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]})"),
                   "overlaps"));
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]})"),
                   "gap"));
  // Fewer bytes described than held.
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})"), "trailing"));
  EXPECT_TRUE(
      says(img(R"("a":{"dtype":"F33","shape":[4],"data_offsets":[0,16]})"), "unknown dtype 'F33'"));
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]})"), "backwards"));
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]})"),
                   "not a non-negative integer"));
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[4]})"), "lacks"));
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})"),
                   "twice"));
  // A shape whose element count overflows.
  EXPECT_TRUE(says(img(R"("a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                       R"("data_offsets":[0,16]})"),
                   "overflows"));
}

TEST(Safetensors, TruncatedAndShortFiles) {
  EXPECT_TRUE(says("abc", "shorter than"));
  const std::string good = safetensors_image(
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", floats({1, 2, 3, 4}));
  EXPECT_EQ(parse(good).size(), 1u);
  EXPECT_TRUE(says(good.substr(0, good.size() - 1), "truncated"));
  EXPECT_TRUE(says(good.substr(0, 20), "runs past the end"));
  EXPECT_TRUE(says(safetensors_image("[1]", ""), "not a JSON object"));
  std::string huge = good;
  huge[7] = 0x7f;  // header length ~ 9e18
  EXPECT_TRUE(says(huge, "100 MB"));
}

TEST(Safetensors, UnsupportedDtypesAreReadNotDecoded) {
  const auto t = parse(safetensors_image(
      R"({"u":{"dtype":"U32","shape":[2],"data_offsets":[0,8]}})", floats({1, 2})));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].dtype, DType::kUnknown);
  EXPECT_EQ(t[0].dtype_text, "U32");
}

}  // namespace
}  // namespace numprobe::ckpt
