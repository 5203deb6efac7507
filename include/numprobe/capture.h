// Capture for libtorch programs: msprobe's PrecisionDebugger in C++.
//
//   numprobe::PrecisionDebugger dbg("config.json");       // or DebuggerOptions
//   for (...) { dbg.start(); train_step(); dbg.stop(); dbg.step(); }
//
// Levels in C++: "L1" and "L2" dump every outermost aten op (Aten.<op>.<overload>.<n>.forward and
// .backward) through a RecordFunction observer; "mix" adds the module entries that
// numprobe::Scope (NUMPROBE_SCOPE) names, "L0" dumps only those. Files are msprobe's layout
// (dump_path/step{N}/rank[R]/dump.json, stack.json, construct.json), complete after stop().
// Task "free_benchmark" (check handler, forward stage) re-runs each sampled outermost aten op on
// perturbed inputs and appends inconsistent outputs to dump_path/free_benchmark.csv, as the
// Python front does (docs/capture.md, "free_benchmark").
// Errors (bad config, unwritable dump_path) throw numprobe::Error with the file and field named.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace numprobe {

namespace capture {
class TorchCapture;
class TorchFreeBenchmark;
}  // namespace capture

struct DebuggerOptions {
  std::string config_path;  // msprobe config.json; empty: defaults (task statistics, level L1)
  // Override the config file, like the Python constructor's arguments.
  std::optional<std::string> task, dump_path, level;
  std::optional<std::vector<int64_t>> step;
  std::optional<int64_t> rank;  // default: no rank ("rank" directory)
};

class PrecisionDebugger {
 public:
  explicit PrecisionDebugger(const std::string& config_path);
  explicit PrecisionDebugger(const DebuggerOptions& options);
  // Completes the current step's files.
  ~PrecisionDebugger();
  PrecisionDebugger(const PrecisionDebugger&) = delete;
  PrecisionDebugger& operator=(const PrecisionDebugger&) = delete;

  void start();
  void stop();
  void step();
  void set_init_step(int64_t step);
  // The rank directory files of the current step go to (task free_benchmark: the dump_path,
  // where free_benchmark.csv is).
  std::string rank_dir() const;

 private:
  std::unique_ptr<capture::TorchCapture> impl_;
  std::unique_ptr<capture::TorchFreeBenchmark> free_benchmark_;  // task free_benchmark
};

}  // namespace numprobe
