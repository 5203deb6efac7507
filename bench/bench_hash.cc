// CRC-32 throughput: numprobe::crc32 (ISA-L's folding CRC where built with it) against zlib's
// crc32_z and a plain memory-read baseline, on one core.
//
//   bench_hash [--size-mib N] [--runs R]
//
// Each figure is the best of R runs over one N MiB buffer (default 1024). The results must agree
// bit for bit (checked, and printed).

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "core/hash.h"

namespace {

using Clock = std::chrono::steady_clock;
volatile uint64_t g_sink = 0;

double best_seconds(int runs, const std::function<void()>& fn) {
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 1024;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--size-mib")) mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
  }
  const size_t bytes = mib << 20;
  std::vector<uint64_t> buf(bytes / 8);
  uint64_t x = 88172645463325252ull;
  for (uint64_t& v : buf) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = x;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
  const double gb = static_cast<double>(bytes) / 1e9;

  const double t_read = best_seconds(runs, [&] {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= buf.size(); i += 4)
      a += buf[i], b += buf[i + 1], c += buf[i + 2], d += buf[i + 3];
    g_sink = g_sink + a + b + c + d;
  });
  uint32_t ours = 0, zlibs = 0;
  const double t_ours = best_seconds(runs, [&] { ours = numprobe::crc32(p, bytes); });
  const double t_zlib =
      best_seconds(runs, [&] { zlibs = static_cast<uint32_t>(crc32_z(0, p, bytes)); });

  std::printf("CRC-32 over %zu MiB, best of %d, 1 core\n", mib, runs);
  std::printf("  memory read (uint64 sum)      %7.2f GB/s\n", gb / t_read);
  std::printf("  numprobe::crc32 (%s)  %7.2f GB/s   %.2fx zlib\n", numprobe::crc32_implementation(),
              gb / t_ours, t_zlib / t_ours);
  std::printf("  zlib crc32_z                  %7.2f GB/s\n", gb / t_zlib);
  std::printf("  values: %08x %08x (%s)\n", ours, zlibs, ours == zlibs ? "equal" : "DIFFERENT");
  return ours == zlibs ? 0 : 1;
}
