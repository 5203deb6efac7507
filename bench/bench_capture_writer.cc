// Capture writer benchmark (no torch): what the background writer of a CaptureSession costs per
// entry. Steps of per-op-sized entries (the per-op regime of bench/capture_bench.py: 808 entries a
// step, about 3 tensor leaves each, half of them with a Python stack of 3 frames shared by many
// entries) are submitted, then each step is completed; the writer thread's CPU time per entry and
// the bytes it wrote are printed. Usage: bench_capture_writer [--steps N] [--entries N] [--dir D]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "capture/capture_session.h"

namespace {

using numprobe::capture::CaptureConfig;
using numprobe::capture::CaptureSession;
using numprobe::capture::EntryRecord;
using numprobe::capture::StackFrame;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void add_leaf(EntryRecord& rec, std::vector<int64_t> shape, double seed, bool requires_grad) {
  auto& leaf = rec.tensor();
  leaf.dtype = "torch.float32";
  leaf.shape = std::move(shape);
  leaf.has_stats = true;
  leaf.requires_grad = requires_grad;
  leaf.stats.count = 64;
  leaf.stats.max = 1.838740348815918 + seed;
  leaf.stats.min = -2.710158586502075 - seed;
  leaf.stats.sum = -6.58569878619164 * seed;
  leaf.stats.sumsq = 69.98717440223 + seed;
}

// A forward Functional.linear entry (3 inputs, 1 output) or a backward one (1 in, 3 out).
void fill_entry(EntryRecord& rec, const std::string& name, bool forward, double seed) {
  rec.name = name;
  rec.begin_dict();
  rec.key(forward ? "input_args" : "input");
  rec.begin_list();
  add_leaf(rec, {4, 16}, seed, false);
  if (forward) {
    add_leaf(rec, {16, 16}, seed * 0.5, true);
    add_leaf(rec, {16}, seed * 0.25, true);
  }
  rec.end();
  if (forward) {
    rec.key("input_kwargs");
    rec.begin_dict();
    rec.end();
  }
  rec.key("output");
  rec.begin_list();
  add_leaf(rec, {4, 16}, seed * 2, true);
  if (!forward) {
    add_leaf(rec, {16, 16}, seed * 3, false);
    add_leaf(rec, {16}, seed * 4, false);
  }
  rec.end();
  rec.end();
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 200;
  int entries = 808;
  std::string dir = "/tmp/numprobe-bench-capture-writer";
  for (int i = 1; i + 1 < argc; ++i) {
    if (!strcmp(argv[i], "--steps"))
      steps = std::stoi(argv[++i]);
    else if (!strcmp(argv[i], "--entries"))
      entries = std::stoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir"))
      dir = argv[++i];
  }
  std::filesystem::remove_all(dir);
  CaptureConfig cfg;
  cfg.dump_path = dir;
  cfg.level = numprobe::capture::Level::kL1;

  // The benchmark script's own file provides real source lines for the stack frames.
  const std::string src = std::filesystem::absolute(__FILE__).string();
  std::vector<CaptureSession::Frames> stacks;
  for (int s = 0; s < 6; ++s) {
    auto f = std::make_shared<std::vector<StackFrame>>();
    f->push_back({src, 40 + s, "forward"});
    f->push_back({src, 60 + s, "_call_impl"});
    f->push_back({src, 80 + s, "<module>"});
    stacks.push_back(std::move(f));
  }

  double t0 = now(), c0 = process_cpu();
  {
    CaptureSession session(cfg);
    for (int step = 0; step < steps; ++step) {
      session.start();
      for (int e = 0; e < entries; ++e) {
        EntryRecord rec = session.new_record();
        const bool forward = e < entries / 2;
        const std::string name =
            "Functional.linear." + std::to_string(e) + (forward ? ".forward" : ".backward");
        fill_entry(rec, name, forward, 0.001 * e);
        session.submit(std::move(rec), forward ? stacks[static_cast<size_t>(e) % 6] : nullptr);
      }
      session.stop();  // the step's files are assembled
      session.advance_step();
    }
    session.flush();
  }
  const double wall = now() - t0, cpu = process_cpu() - c0;
  uint64_t bytes = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file()) bytes += f.file_size();
  const double n = static_cast<double>(steps) * entries;
  std::printf("%d steps x %d entries: wall %.3f s, process CPU %.3f s\n", steps, entries, wall,
              cpu);
  std::printf("per entry: %.2f us CPU (recording + writer), %.2f us wall\n", cpu / n * 1e6,
              wall / n * 1e6);
  std::printf("files: %.1f MB (%.0f bytes per entry), %.1f MB/s of CPU time\n", bytes / 1e6,
              bytes / n, bytes / 1e6 / cpu);
  std::filesystem::remove_all(dir);
  return 0;
}
