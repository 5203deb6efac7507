// Compare benchmark.
//  1. Statistics-mode compare of the real ResNet-50 msprobe pair (2,822 rows): load + flatten +
//     pair + metrics + CSV + summary rendering, best of N runs.
//  2. A generated pair of about `rows` rows (default 1,000,000): same structure, different values;
//     rows/s and peak RSS against the two dump.json files' size, in a child process.
// Usage: bench_compare [fixtures_dir] [runs] [rows]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench_util.h"
#include "dump_generator.h"
#include "numprobe/compare.h"

namespace {

void generated_pair(size_t rows) {
  const std::string dir = "/tmp/numprobe-bench-compare";
  std::filesystem::remove_all(dir);
  const size_t entries = rows * 10 / 43;  // ~4.3 rows per generated entry
  numprobe::bench::generate_statistics_dump(dir + "/t", entries, 7, 1);
  numprobe::bench::generate_statistics_dump(dir + "/g", entries, 7, 2);
  const double mb = static_cast<double>(std::filesystem::file_size(dir + "/t/dump.json") +
                                        std::filesystem::file_size(dir + "/g/dump.json")) /
                    1e6;
  int fds[2];
  if (pipe(fds) != 0) return;
  if (fork() == 0) {
    auto t0 = std::chrono::steady_clock::now();
    numprobe::CompareReport rep = numprobe::compare_dumps(dir + "/t", dir + "/g");
    size_t bytes = numprobe::render_compare_csv(rep.pairs.at(0), false).size();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double out[4] = {s, static_cast<double>(rep.pairs[0].rows.size()),
                     static_cast<double>(numprobe::bench::rss_hwm_kib()),
                     static_cast<double>(bytes)};
    if (write(fds[1], out, sizeof out) != sizeof out) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double r[4] = {};
  if (read(fds[0], r, sizeof r) != sizeof r) return;
  int st = 0;
  wait(&st);
  printf(
      "generated pair: %.0f rows, inputs %.0f MB: %.2f s (load + compare + CSV %.0f MB) = %.0f "
      "rows/s, 1 thread; peak RSS %.0f MB = %.2fx the input JSON\n",
      r[1], mb, r[0], r[3] / 1e6, r[1] / r[0], r[2] / 1024, r[2] / 1024 * 1.048576 / mb);
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  std::string fx = argc > 1 ? argv[1] : "../shared/fixtures/msprobe";
  int runs = argc > 2 ? std::stoi(argv[2]) : 20;
  size_t gen_rows = argc > 3 ? std::stoul(argv[3]) : 1000000;
  const std::string root = fx + "/quick_start_resnet50_gpu_mix_statistics";
  double best = 1e9;
  size_t rows = 0, bytes = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    numprobe::CompareReport rep = numprobe::compare_dumps(root + "/step0", root + "/step1");
    for (const auto& p : rep.pairs) bytes += numprobe::render_compare_csv(p, true).size();
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
  if (gen_rows > 0) generated_pair(gen_rows);
  return bytes == 0;
}
