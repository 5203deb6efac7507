// Throughput of compute_stats against a plain memory-read baseline.
//
//   bench_stats [--size-mib N] [--runs R]
//
// Each figure is the best of R runs over a buffer of N MiB (default 1024) that is reused for every
// dtype. The baseline sums the buffer as uint64 with independent accumulators, i.e. about as fast
// as one core can stream the bytes.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/stats.h"
#include "numprobe/dtype.h"

namespace {

using Clock = std::chrono::steady_clock;

volatile double g_sink = 0;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

double best_seconds(int runs, const std::function<void()>& fn) {
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    fn();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
  }
  return best;
}

// Approximately N(0, 1): Irwin-Hall sum of 4 uniforms from a xorshift generator, rescaled.
class Normalish {
 public:
  float next() {
    float s = 0;
    for (int i = 0; i < 4; ++i) {
      state_ ^= state_ << 13;
      state_ ^= state_ >> 7;
      state_ ^= state_ << 17;
      s += static_cast<float>(state_ >> 40) * (1.0f / 16777216.0f);
    }
    return (s - 2.0f) * 1.7320508f;
  }

 private:
  uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

uint64_t read_baseline(const void* buf, size_t bytes) {
  const auto* p = static_cast<const uint64_t*>(buf);
  const size_t n = bytes / 8;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

void sink(const numprobe::TensorStats& s) {
  g_sink = g_sink + s.sum + s.max;
}

}  // namespace

int main(int argc, char** argv) {
  size_t size_mib = 1024;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--size-mib" && i + 1 < argc) {
      size_mib = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--size-mib N] [--runs R]\n", argv[0]);
      return 2;
    }
  }
  if (size_mib == 0) size_mib = 1;
  const size_t bytes = size_mib << 20;
  std::unique_ptr<void, FreeDeleter> mem(std::aligned_alloc(64, bytes));
  if (!mem) {
    std::fprintf(stderr, "cannot allocate %zu MiB\n", size_mib);
    return 1;
  }
  void* buf = mem.get();
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("bench_stats: %zu MiB buffer, best of %d runs, %u hardware threads\n\n", size_mib,
              runs, std::thread::hardware_concurrency());

  // ---- float32 -------------------------------------------------------------------------------
  const size_t n32 = bytes / 4;
  {
    auto* f = static_cast<float*>(buf);
    Normalish rng;
    for (size_t i = 0; i < n32; ++i) f[i] = rng.next();
  }
  numprobe::StatsOptions one;
  one.threads = 1;
  uint64_t baseline_sum = 0;
  const double t_base = best_seconds(runs, [&] { baseline_sum = read_baseline(buf, bytes); });
  g_sink = g_sink + static_cast<double>(baseline_sum);
  const double t_f32 = best_seconds(
      runs, [&] { sink(numprobe::compute_stats(buf, n32, numprobe::DType::kF32, one)); });
  std::printf("memory read baseline (uint64 sum, 1 thread): %7.2f GB/s\n", gb / t_base);
  std::printf(
      "float32 compute_stats (1 thread):            %7.2f GB/s  (%.2f G elem/s, %.0f%% of "
      "baseline)\n",
      gb / t_f32, static_cast<double>(n32) / t_f32 / 1e9, 100.0 * t_base / t_f32);

  numprobe::StatsOptions two;
  two.threads = 2;
  const double t_f32_mt = best_seconds(
      runs, [&] { sink(numprobe::compute_stats(buf, n32, numprobe::DType::kF32, two)); });
  std::printf("float32 compute_stats (2 threads):           %7.2f GB/s\n", gb / t_f32_mt);

  // ---- 16-bit floats -------------------------------------------------------------------------
  const size_t n16 = bytes / 2;
  for (const auto dtype : {numprobe::DType::kBF16, numprobe::DType::kF16}) {
    auto* h = static_cast<uint16_t*>(buf);
    Normalish rng;
    for (size_t i = 0; i < n16; ++i) {
      const float v = rng.next();
      h[i] =
          dtype == numprobe::DType::kBF16 ? numprobe::float_to_bf16(v) : numprobe::float_to_half(v);
    }
    const double t =
        best_seconds(runs, [&] { sink(numprobe::compute_stats(buf, n16, dtype, one)); });
    const double t2 =
        best_seconds(runs, [&] { sink(numprobe::compute_stats(buf, n16, dtype, two)); });
    const std::string name(numprobe::dtype_name(dtype));
    std::printf("%-9s compute_stats (1 thread):           %7.2f G elem/s (%.2f GB/s)\n",
                name.c_str(), static_cast<double>(n16) / t / 1e9, gb / t);
    std::printf("%-9s compute_stats (2 threads):          %7.2f G elem/s\n", name.c_str(),
                static_cast<double>(n16) / t2 / 1e9);
  }

  // ---- others, for reference -----------------------------------------------------------------
  {
    auto* d = static_cast<double*>(buf);
    Normalish rng;
    for (size_t i = 0; i < bytes / 8; ++i) d[i] = rng.next();
    const double t = best_seconds(
        runs, [&] { sink(numprobe::compute_stats(buf, bytes / 8, numprobe::DType::kF64, one)); });
    std::printf("float64   compute_stats (1 thread):           %7.2f GB/s\n", gb / t);
  }
  {
    auto* b = static_cast<uint8_t*>(buf);
    Normalish rng;
    for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(rng.next() * 40) & 0x7E;
    const double t = best_seconds(
        runs, [&] { sink(numprobe::compute_stats(buf, bytes, numprobe::DType::kF8E4M3FN, one)); });
    std::printf("fp8 e4m3  compute_stats (1 thread):           %7.2f G elem/s\n",
                static_cast<double>(bytes) / t / 1e9);
  }
  {
    // Attention-mask-like data: -inf in every block forces the careful path everywhere.
    auto* f = static_cast<float*>(buf);
    Normalish rng;
    for (size_t i = 0; i < n32; ++i) f[i] = (i % 1000 == 0) ? -INFINITY : rng.next();
    const double t = best_seconds(
        runs, [&] { sink(numprobe::compute_stats(buf, n32, numprobe::DType::kF32, one)); });
    std::printf("float32 with -inf every 1000 (1 thread):     %7.2f GB/s\n", gb / t);
  }
  return 0;
}
