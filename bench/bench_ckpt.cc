// Checkpoint compare benchmark: generates a safetensors pair (default ~1 GB a side, half float32
// and half bfloat16 tensors of 4M elements; b differs from a by a small noise on every tensor and
// a large one on one tensor), then times ckpt-compare's open + compare + JSON/CSV in a child
// process (so that its peak RSS is the compare's alone), warm page cache, one thread.
// GB/s counts the tensor bytes of both sides.
// Usage: bench_ckpt [MB per side] [runs]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_compare.h"
#include "ckpt/ckpt_report.h"
#include "numprobe/dtype.h"

namespace {

constexpr size_t kElements = size_t{4} << 20;

// Writes one safetensors file of `tensors` tensors; seed 0 is the baseline, others add noise.
void write_safetensors(const std::string& path, size_t tensors, unsigned seed) {
  std::string header = "{";
  size_t at = 0;
  for (size_t k = 0; k < tensors; ++k) {
    const bool f32 = k % 2 == 0;
    const size_t bytes = kElements * (f32 ? 4 : 2);
    header += (k ? "," : "") + std::string("\"layers.") + std::to_string(k) +
              ".weight\":{\"dtype\":\"" + (f32 ? "F32" : "BF16") + "\",\"shape\":[" +
              std::to_string(kElements / 1024) + ",1024],\"data_offsets\":[" + std::to_string(at) +
              "," + std::to_string(at + bytes) + "]}";
    at += bytes;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::mt19937 base(42), noise(seed);
  std::normal_distribution<float> w(0.f, 0.02f), e(0.f, 1e-5f);
  std::vector<float> v(kElements);
  std::vector<uint16_t> h(kElements);
  for (size_t k = 0; k < tensors; ++k) {
    const float scale = seed != 0 && k == tensors / 2 ? 100.f : 1.f;
    for (float& x : v) x = w(base) + (seed ? scale * e(noise) : 0.f);
    if (k % 2 == 0) {
      f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
    } else {
      for (size_t i = 0; i < kElements; ++i) h[i] = numprobe::float_to_bf16(v[i]);
      f.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size() * 2));
    }
  }
}

void run_once(const std::string& dir) {
  std::array<double, 4> r{};
  const bool ok = numprobe::bench::in_child(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        const auto a = numprobe::ckpt::Checkpoint::open(dir + "/a.safetensors");
        const auto b = numprobe::ckpt::Checkpoint::open(dir + "/b.safetensors");
        const auto res = numprobe::ckpt::compare_checkpoints(a, b);
        numprobe::ckpt::write_reports(res, dir + "/out.json", true);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return std::array<double, 4>{s, static_cast<double>(res.summary.bytes),
                                     static_cast<double>(numprobe::bench::rss_hwm_kib()),
                                     static_cast<double>(res.summary.compared)};
      },
      r);
  if (!ok) return;
  printf(
      "ckpt-compare: %.0f tensors, %.2f GB of tensor data (both sides) in %.2f s = %.2f GB/s "
      "on 1 thread; peak RSS %.0f MB\n",
      r[3], r[1] / 1e9, r[0], r[1] / 1e9 / r[0], r[2] / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  const double mb = argc > 1 ? std::stod(argv[1]) : 1024;
  const int runs = argc > 2 ? std::stoi(argv[2]) : 3;
  const size_t tensors = std::max<size_t>(2, static_cast<size_t>(mb * 1e6 / (kElements * 3)));
  const std::string dir = "/tmp/numprobe-bench-ckpt";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_safetensors(dir + "/a.safetensors", tensors, 0);
  write_safetensors(dir + "/b.safetensors", tensors, 1);
  printf("generated %s/{a,b}.safetensors: %zu tensors, %.2f GB a side\n", dir.c_str(), tensors,
         static_cast<double>(std::filesystem::file_size(dir + "/a.safetensors")) / 1e9);
  for (int k = 0; k < runs; ++k) run_once(dir);
  std::filesystem::remove_all(dir);
  return 0;
}
