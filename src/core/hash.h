// Content hashes of raw tensor bytes. Same bytes give the same hash whatever framework produced
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace numprobe {

// zlib-compatible CRC-32 (what msprobe's summary_mode "md5" actually stores). seed continues a
// previous crc: crc32(ab) == crc32(b, crc32(a)).
uint32_t crc32(const void* data, size_t size, uint32_t seed = 0);
// The CRC-32 of a || b from crc_a = crc32(a), crc_b = crc32(b) and b's length (zlib's combine).
uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, size_t size_b);
// Which implementation crc32 runs ("isa-l crc32_gzip_refl" or "zlib crc32_z"), for benchmarks.
const char* crc32_implementation();
// XXH3 64-bit (libxxhash), seed 0.
uint64_t xxh3_64(const void* data, size_t size);
// "%08x", as msprobe writes the md5 field.
std::string crc32_hex(uint32_t crc);

}  // namespace numprobe
