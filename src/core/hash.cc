#include "numprobe/hash.h"

#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <thread>
#include <vector>

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

uint32_t crc32_parallel(const void* data, size_t size, unsigned threads) {
  constexpr size_t kMinPerThread = size_t{8} << 20;  // below this, starting threads costs more
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t parts = std::min<size_t>(threads, std::max<size_t>(1, size / kMinPerThread));
  if (parts <= 1) return crc32(data, size);
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t per = size / parts;
  std::vector<uint32_t> crcs(parts);
  std::vector<std::thread> pool;
  for (size_t i = 1; i < parts; ++i) {
    const size_t n = i + 1 == parts ? size - i * per : per;
    pool.emplace_back([&crcs, p, per, i, n] { crcs[i] = crc32(p + i * per, n); });
  }
  crcs[0] = crc32(p, per);
  for (auto& t : pool) t.join();
  // CRC(a || b) from CRC(a), CRC(b) and |b|: zlib's combine (a few matrix squarings).
  uint32_t crc = crcs[0];
  for (size_t i = 1; i < parts; ++i) {
    const size_t n = i + 1 == parts ? size - i * per : per;
    crc = static_cast<uint32_t>(::crc32_combine64(crc, crcs[i], static_cast<z_off64_t>(n)));
  }
  return crc;
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
