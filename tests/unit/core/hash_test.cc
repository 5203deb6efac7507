#include "core/hash.h"

#include <gtest/gtest.h>
#include <zlib.h>

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

// Bit for bit zlib's crc32 (the second reader; msprobe's md5 task is zlib.crc32) whichever
// implementation runs: every size 0..4096 at every start offset 0..63 (the folding CRC has separate
// paths for unaligned heads, short tails and each block size), with zero and non-zero seeds.
TEST(Crc32, EqualsZlibAtEverySizeAndAlignment) {
  std::vector<uint8_t> data(4096 + 64);
  uint32_t x = 2463534242u;
  for (uint8_t& b : data) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  size_t checked = 0;
  for (size_t start = 0; start < 64; ++start) {
    for (size_t size = 0; size <= 4096; size += start < 8 ? 1 : 61) {
      const uint8_t* p = data.data() + start;
      for (uint32_t seed : {0u, 0xCBF43926u}) {
        const auto want = static_cast<uint32_t>(::crc32_z(seed, p, size));  // zlib: the reference
        ASSERT_EQ(crc32(p, size, seed), want)
            << crc32_implementation() << " size " << size << " start " << start << " seed " << seed;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 60000u);
  // Large buffers (the wide folding loop), unaligned.
  std::vector<uint8_t> big(size_t{3} << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t start : {size_t{0}, size_t{1}, size_t{13}}) {
    const size_t n = big.size() - start;
    EXPECT_EQ(crc32(big.data() + start, n),
              static_cast<uint32_t>(::crc32_z(0, big.data() + start, n)))
        << start;
  }
}

TEST(Crc32, CombineEqualsOneShot) {
  std::vector<uint8_t> data(70001);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 40503u >> 7);
  const uint32_t whole = crc32(data.data(), data.size());
  for (size_t cut : {size_t{0}, size_t{1}, size_t{4096}, size_t{69999}, data.size()}) {
    EXPECT_EQ(crc32_combine(crc32(data.data(), cut), crc32(data.data() + cut, data.size() - cut),
                            data.size() - cut),
              whole)
        << cut;
  }
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
