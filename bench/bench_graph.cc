// Graph build benchmark (`numprobe graph`: load + compare + graph + .vis.db).
//  1. The real ResNet-50 msprobe pair (the fixture msprobe's own graph was built from): best of N.
//  2. A generated pair of `entries` entries a side (default 1,000,000) with construct.json: seconds
//     and peak RSS against the two dump.json files' size, in a child process.
// Usage: bench_graph [fixtures_dir] [runs] [entries per side] (0 entries skips part 2)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench_util.h"
#include "dump_generator.h"
#include "graph/graph_run.h"

namespace {

void resnet(const std::string& fx, int runs) {
  const std::string out = "/tmp/numprobe-bench-graph/resnet.vis.db";
  double best = 1e9;
  numprobe::graph::GraphRunResult r;
  for (int i = 0; i < runs; ++i) {
    numprobe::graph::GraphRunOptions o;
    o.target = fx + "/quick_start_resnet50_gpu_mix_statistics/step0";
    o.golden = fx + "/quick_start_resnet50_gpu_mix_statistics/step1";
    o.out = out;
    auto t0 = std::chrono::steady_clock::now();
    r = numprobe::graph::run_graph(o);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  printf(
      "ResNet-50 pair: %zu nodes, best of %d: %.3f s (load + compare + graph + .vis.db of %.1f "
      "MB)\n",
      r.nodes, runs, best, static_cast<double>(std::filesystem::file_size(out)) / 1e6);
}

void generated(size_t entries, unsigned threads) {
  const std::string dir = "/tmp/numprobe-bench-graph/gen";
  const double mb = static_cast<double>(std::filesystem::file_size(dir + "/t/dump.json") +
                                        std::filesystem::file_size(dir + "/g/dump.json")) /
                    1e6;
  int fds[2];
  if (pipe(fds) != 0) return;
  if (fork() == 0) {
    numprobe::graph::GraphRunOptions o;
    o.target = dir + "/t";
    o.golden = dir + "/g";
    o.out = dir + "/out.vis.db";
    o.threads = threads;
    auto t0 = std::chrono::steady_clock::now();
    numprobe::graph::GraphRunResult r = numprobe::graph::run_graph(o);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double out[6] = {s,
                     r.compare_s,
                     r.write_s,
                     static_cast<double>(r.nodes),
                     static_cast<double>(numprobe::bench::rss_hwm_kib()),
                     static_cast<double>(std::filesystem::file_size(o.out))};
    if (write(fds[1], out, sizeof out) != sizeof out) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double r[6] = {};
  const bool ok = read(fds[0], r, sizeof r) == sizeof r;
  close(fds[0]);
  int st = 0;
  wait(&st);
  if (!ok) {
    printf("generated pair: the graph run failed\n");
    return;
  }
  printf(
      "generated pair: %zu entries a side, inputs %.0f MB: %.1f s (%.1f s load + compare, %.1f s "
      "graph + .vis.db of %.0f MB), %.0f nodes, %u thread(s); peak RSS %.0f MB = %.2fx the "
      "input JSON\n",
      entries, mb, r[0], r[1], r[2], r[5] / 1e6, r[3], threads, r[4] / 1024,
      r[4] / 1024 * 1.048576 / mb);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string fx = argc > 1 ? argv[1] : "../shared/fixtures/msprobe";
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const size_t entries = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000000;
  std::filesystem::create_directories("/tmp/numprobe-bench-graph");
  resnet(fx, runs);
  if (entries > 0) {
    const std::string dir = "/tmp/numprobe-bench-graph/gen";
    std::filesystem::remove_all(dir);
    numprobe::bench::generate_statistics_dump(dir + "/t", entries, 7, 1, true);
    numprobe::bench::generate_statistics_dump(dir + "/g", entries, 7, 2, true);
    generated(entries, 2);
    std::filesystem::remove_all(dir);
  }
  return 0;
}
