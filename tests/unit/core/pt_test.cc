// torch.save archives read without torch. The seeds were written by torch 1.13's torch.save
// (tests/fuzz/seeds/pt); tests/python/test_pt_files.py checks more dtypes and views against torch.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/pt.h"
#include "numprobe/error.h"
#include "test_support.h"

namespace numprobe {
namespace {

std::string seed(const std::string& name) {
  return testing::read_file(std::string(NUMPROBE_SOURCE_DIR) + "/tests/fuzz/seeds/pt/" + name);
}

PtTensor parse(const std::string& bytes) {
  return parse_pt(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.pt");
}

template <typename T>
std::vector<T> elements(const std::string& bytes, const PtTensor& t) {
  std::vector<T> out(t.element_count);
  copy_pt_elements(reinterpret_cast<const uint8_t*>(bytes.data()), t, out.data());
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    parse(bytes);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.pt");
    return e.what();
  }
  return "";
}

TEST(Pt, ContiguousFloat32) {
  const std::string b = seed("f32.pt");
  const PtTensor t = parse(b);
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(t.contiguous);
  EXPECT_EQ(elements<float>(b, t), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Pt, NonContiguousBf16ViewWithOffset) {
  // torch.arange(12).reshape(3, 4).t()[1:]: offset 1, strides (1, 4).
  const std::string b = seed("bf16_view.pt");
  const PtTensor t = parse(b);
  EXPECT_EQ(t.dtype, DType::kBF16);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(t.stride, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(t.storage_offset, 1);
  EXPECT_FALSE(t.contiguous);
  std::vector<float> got;
  for (uint16_t bits : elements<uint16_t>(b, t)) got.push_back(bf16_to_float(bits));
  EXPECT_EQ(got, (std::vector<float>{1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(Pt, ParameterAndZeroDim) {
  const std::string p = seed("param.pt");
  const PtTensor t = parse(p);
  EXPECT_EQ(t.dtype, DType::kF16);
  EXPECT_EQ(t.element_count, 3u);
  const std::string s = seed("scalar.pt");
  const PtTensor z = parse(s);
  EXPECT_EQ(z.dtype, DType::kI64);
  EXPECT_TRUE(z.shape.empty());
  EXPECT_EQ(elements<int64_t>(s, z), (std::vector<int64_t>{3}));
}

TEST(Pt, RefusesToRunOtherCallables) {
  std::string b = seed("f32.pt");
  const size_t at = b.find("_rebuild_tensor_v2");
  ASSERT_NE(at, std::string::npos);
  b.replace(at, 18, "_rebuild_tensor_v9");
  EXPECT_NE(error_of(b).find("unsupported object torch._utils._rebuild_tensor_v9"),
            std::string::npos);
}

TEST(Pt, ClearErrorsForBadFiles) {
  EXPECT_NE(error_of("\x80\x02}q\x00.").find("legacy"), std::string::npos);
  const std::string b = seed("f32.pt");
  EXPECT_NE(error_of(b.substr(0, b.size() - 30)), "");  // truncated: no end record
  // A storage shorter than the view: patch the shape (2, 3) to (2, 4) in the pickle.
  std::string big = b;
  const size_t at = big.find(std::string("K\x02K\x03\x86", 5));
  ASSERT_NE(at, std::string::npos);
  big[at + 3] = 4;
  EXPECT_NE(error_of(big).find("reaches element"), std::string::npos);
}

}  // namespace
}  // namespace numprobe
