#include "numprobe/hash.h"

#include <xxhash.h>
#include <zlib.h>

namespace numprobe {

uint32_t crc32(const void* data, size_t size, uint32_t seed) {
  if (size == 0) return seed;
  // crc32_z takes a size_t length, so tensors over 4 GiB need no chunking.
  return static_cast<uint32_t>(::crc32_z(seed, static_cast<const Bytef*>(data), size));
}

uint64_t xxh3_64(const void* data, size_t size) {
  return static_cast<uint64_t>(XXH3_64bits(size ? data : "", size));
}

std::string crc32_hex(uint32_t crc) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(8, '0');
  for (int i = 7; i >= 0; --i, crc >>= 4) s[static_cast<size_t>(i)] = kHex[crc & 0xf];
  return s;
}

}  // namespace numprobe
