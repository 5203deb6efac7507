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
// crc32(data, size) computed in up to `threads` parts at once (0: all cores) and combined: the same
// value. Worth it for large buffers (numprobe stats); small ones run on the calling thread.
uint32_t crc32_parallel(const void* data, size_t size, unsigned threads = 0);
// Which implementation crc32 runs ("isa-l crc32_gzip_refl" or "zlib crc32_z"), for benchmarks.
const char* crc32_implementation();
// XXH3 64-bit (libxxhash), seed 0.
uint64_t xxh3_64(const void* data, size_t size);
// "%08x", as msprobe writes the md5 field.
std::string crc32_hex(uint32_t crc);

}  // namespace numprobe
