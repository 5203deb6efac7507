#include "core/hash.h"

#include <xxhash.h>
#include <zlib.h>

#ifdef NUMPROBE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace numprobe {

uint32_t crc32(const void* data, size_t size, uint32_t seed) {
  if (size == 0) return seed;
#ifdef NUMPROBE_HAVE_ISAL
  // ISA-L's folding CRC (PCLMULQDQ, VPCLMULQDQ where the CPU has it; dispatched at run time):
  // the same reflected CRC-32 and seed convention as zlib's crc32, at memory speed (~6x zlib here).
  return ::crc32_gzip_refl(seed, static_cast<const unsigned char*>(data), size);
#else
  // crc32_z takes a size_t length, so tensors over 4 GiB need no chunking.
  return static_cast<uint32_t>(::crc32_z(seed, static_cast<const Bytef*>(data), size));
#endif
}

uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, size_t size_b) {
  // zlib's combine: a few GF(2) matrix squarings, independent of the data.
  return static_cast<uint32_t>(::crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(size_b)));
}

const char* crc32_implementation() {
#ifdef NUMPROBE_HAVE_ISAL
  return "isa-l crc32_gzip_refl";
#else
  return "zlib crc32_z";
#endif
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
