#include "numprobe/hash.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace numprobe {
namespace {

TEST(Crc32, KnownVectors) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32(check.data(), check.size()), 0xCBF43926u);  // the CRC-32 "check" value
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32(nullptr, 0), 0u);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(crc32(fox.data(), fox.size()), 0x414FA339u);
  const uint8_t zeros[32] = {};
  EXPECT_EQ(crc32(zeros, sizeof(zeros)), 0x190A55ADu);
}

TEST(Crc32, ChainingEqualsOneShot) {
  std::vector<uint8_t> data(100003);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 7));
  const uint32_t whole = crc32(data.data(), data.size());
  for (size_t cut : {size_t{0}, size_t{1}, size_t{4096}, size_t{50000}, data.size()}) {
    const uint32_t first = crc32(data.data(), cut);
    EXPECT_EQ(crc32(data.data() + cut, data.size() - cut, first), whole) << cut;
  }
  // A zero-length continuation keeps the seed.
  EXPECT_EQ(crc32(data.data(), 0, whole), whole);
}

TEST(Crc32, HexFormat) {
  EXPECT_EQ(crc32_hex(0xCBF43926u), "cbf43926");
  EXPECT_EQ(crc32_hex(0x1u), "00000001");
  EXPECT_EQ(crc32_hex(0u), "00000000");
  EXPECT_EQ(crc32_hex(0xFFFFFFFFu), "ffffffff");
}

TEST(Xxh3, KnownVectors) {
  EXPECT_EQ(xxh3_64("", 0), 0x2D06800538D394C2ull);
  EXPECT_EQ(xxh3_64(nullptr, 0), 0x2D06800538D394C2ull);
}

TEST(Xxh3, DependsOnEveryByte) {
  std::vector<uint8_t> data(5000, 7);
  const uint64_t base = xxh3_64(data.data(), data.size());
  EXPECT_EQ(xxh3_64(data.data(), data.size()), base);
  data[4999] ^= 1;
  EXPECT_NE(xxh3_64(data.data(), data.size()), base);
  EXPECT_NE(xxh3_64(data.data(), data.size() - 1), base);
}

}  // namespace
}  // namespace numprobe
