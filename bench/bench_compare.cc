// Compare benchmark.
//  1. Statistics-mode compare of the real ResNet-50 msprobe pair (2,822 rows): load + flatten +
//     pair + metrics + CSV file (with stack column) + summary rendering, best of N runs.
//  2. A generated pair of about `rows` rows (default 1,000,000): same structure, different values;
//     rows/s and peak RSS against the two dump.json files' size, in a child process.
//  3. Tensor mode over generated .npy dumps (fp32 and bf16, 64 tensors of 4M elements a side):
//     GB/s of tensor data read and compared on one thread.
// Usage: bench_compare [fixtures_dir] [runs] [rows] [tensor elements per row]
// (0 rows or 0 elements skips that part)
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench_util.h"
#include "dump_generator.h"
#include "numprobe/compare.h"
#include "numprobe/dtype.h"

namespace {

// Compares the pair in a child process (so that its peak RSS is the compare's alone).
void time_generated_pair(const std::string& dir, double mb, unsigned threads) {
  std::array<double, 4> r{};
  const bool ok = numprobe::bench::in_child(
      [&] {
        auto t0 = std::chrono::steady_clock::now();
        numprobe::CompareReport rep = numprobe::compare_dumps(dir + "/t", dir + "/g", threads);
        numprobe::write_compare_csv(dir + "/result.csv", rep.pairs.at(0), false);
        const auto bytes = static_cast<size_t>(std::filesystem::file_size(dir + "/result.csv"));
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return std::array<double, 4>{s, static_cast<double>(rep.pairs[0].rows.size()),
                                     static_cast<double>(numprobe::bench::rss_hwm_kib()),
                                     static_cast<double>(bytes)};
      },
      r);
  if (!ok) return;
  printf(
      "generated pair: %.0f rows, inputs %.0f MB: %.2f s (load + compare + CSV file %.0f MB) = "
      "%.0f rows/s, %u thread(s); peak RSS %.0f MB = %.2fx the input JSON\n",
      r[1], mb, r[0], r[3] / 1e6, r[1] / r[0], threads, r[2] / 1024, r[2] / 1024 * 1.048576 / mb);
}

void generated_pair(size_t rows) {
  const std::string dir = "/tmp/numprobe-bench-compare";
  std::filesystem::remove_all(dir);
  const size_t entries = rows * 10 / 43;  // ~4.3 rows per generated entry
  numprobe::bench::generate_statistics_dump(dir + "/t", entries, 7, 1);
  numprobe::bench::generate_statistics_dump(dir + "/g", entries, 7, 2);
  const double mb = static_cast<double>(std::filesystem::file_size(dir + "/t/dump.json") +
                                        std::filesystem::file_size(dir + "/g/dump.json")) /
                    1e6;
  time_generated_pair(dir, mb, 1);
  time_generated_pair(dir, mb, 2);
  std::filesystem::remove_all(dir);
}

// Tensor mode: compare_dumps over two dumps of `rows` tensors, warm page cache, 1 thread. GB/s
// counts the tensor bytes of both sides (what a compare has to read).
void tensor_mode(numprobe::DType dtype, size_t rows, size_t elements) {
  const std::string dir = "/tmp/numprobe-bench-compare-tensor";
  std::filesystem::remove_all(dir);
  size_t bytes = numprobe::bench::generate_tensor_dump(dir + "/t", rows, elements, dtype, 1.0001);
  bytes += numprobe::bench::generate_tensor_dump(dir + "/g", rows, elements, dtype, 1.0);
  double best = 1e9;
  double cosine = 0;
  for (int run = 0; run < 4; ++run) {  // the first run also warms the page cache
    auto t0 = std::chrono::steady_clock::now();
    numprobe::CompareReport rep = numprobe::compare_dumps(dir + "/t", dir + "/g", 1);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0 && s < best) best = s;
    cosine = rep.pairs.at(0).rows.at(0).tensor.cosine;
  }
  printf(
      "tensor mode, %s: %zu rows x %zu elements, %.0f MB of tensor data (both sides): best of 3 "
      "%.3f s = %.2f GB/s, 1 thread (cosine of row 0: %.9f)\n",
      std::string(numprobe::dtype_name(dtype)).c_str(), rows, elements, bytes / 1e6, best,
      bytes / best / 1e9, cosine);
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  std::string fx = argc > 1 ? argv[1] : "../shared/fixtures/msprobe";
  int runs = argc > 2 ? std::stoi(argv[2]) : 20;
  size_t gen_rows = argc > 3 ? std::stoul(argv[3]) : 1000000;
  size_t tensor_elements = argc > 4 ? std::stoul(argv[4]) : size_t{1} << 22;
  const std::string root = fx + "/quick_start_resnet50_gpu_mix_statistics";
  const std::string out = "/tmp/numprobe-bench-compare-resnet";
  std::filesystem::create_directories(out);
  double best = 1e9;
  size_t rows = 0, bytes = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    numprobe::CompareReport rep = numprobe::compare_dumps(root + "/step0", root + "/step1", 1);
    // What `numprobe compare -s` writes: the CSV file (with the stack column) and the summary.
    for (const auto& p : rep.pairs) {
      numprobe::write_compare_csv(out + "/result.csv", p, true);
      bytes += static_cast<size_t>(std::filesystem::file_size(out + "/result.csv"));
    }
    bytes += numprobe::render_summary_json(rep).size();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
    rows = rep.pairs.empty() ? 0 : rep.pairs[0].rows.size();
  }
  printf("ResNet-50 step0 vs step1, statistics mode: %zu rows, best of %d: %.4f s (%.0f rows/s)\n",
         rows, runs, best, rows / best);
  printf(
      "msprobe's compare on this pair, 2.2-2.4 s as quoted in issue 4 (not measured here): "
      "%.0fx faster (1 thread)\n",
      2.2 / best);
  if (tensor_elements > 0) {
    tensor_mode(numprobe::DType::kF32, 64, tensor_elements);
    tensor_mode(numprobe::DType::kBF16, 64, tensor_elements);
    tensor_mode(numprobe::DType::kF16, 64, tensor_elements);
  }
  if (gen_rows > 0) generated_pair(gen_rows);
  return bytes == 0;
}
