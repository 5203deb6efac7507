// free_benchmark for libtorch programs (the C++ API's PrecisionDebugger with task
// "free_benchmark"; docs/capture.md, "free_benchmark in C++"). A RecordFunction observer sees every
// outermost aten op of a selected step; for a sampled call it keeps copies of the inputs and the
// random generators' states, and when the call returns it runs the op again through the
// dispatcher on perturbed copies, with the generators put back to the state the call saw and then
// forward again, compares the outputs with the engine's ratio and appends a row to
// free_benchmark.csv for an output beyond its dtype's threshold. The training's own tensors,
// graph and generators end exactly as without the check.
//
// What an observer cannot do is refused with the reason: handler_type "fix" (an observer cannot
// replace an op's output) and fuzz_stage "backward" (there is no autograd hook per aten call here).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "capture/capture_config.h"

namespace numprobe::capture {

class TorchFreeBenchmark {
 public:
  // cfg.task must be kFreeBenchmark; throws InputError(source) for what the C++ API cannot run.
  TorchFreeBenchmark(CaptureConfig cfg, const std::string& source);
  ~TorchFreeBenchmark();
  TorchFreeBenchmark(const TorchFreeBenchmark&) = delete;
  TorchFreeBenchmark& operator=(const TorchFreeBenchmark&) = delete;

  void start();
  void stop();
  void step();
  void set_init_step(int64_t step) { step_ = step; }
  void set_rank(int64_t rank) { rank_ = rank; }
  // Where free_benchmark.csv goes: the config's dump_path.
  const std::string& dump_path() const { return cfg_.dump_path; }
  int64_t rows_written() const { return rows_written_; }
  int64_t calls_perturbed() const { return calls_perturbed_; }

  // For the observer (free_benchmark_run.cc).
  static TorchFreeBenchmark* active() { return active_.load(std::memory_order_acquire); }
  const CaptureConfig& config() const { return cfg_; }
  // Counts the call and says whether it is perturbed (list/scope, max_sample; a call with no
  // floating input to perturb is not checkable and uses no sample); `entry` is set to
  // "<api_type>.<n>.forward".
  bool sample(const std::string& api_type, bool checkable, std::string& entry);
  // Appends the row of an output beyond its threshold (deviation: ratio - 1, or to_cpu's error).
  // A sign flip beyond the tolerance is reported as msprobe's "symbol_flipping".
  void report(const std::string& entry, double deviation, bool symbol_flipping,
              const std::string& dtype, const std::string& shape,
              std::optional<int64_t> output_index);
  // The preheat rule: while preheating, remembers the ratio and returns true (no judgement).
  bool preheating(const std::string& api_type, double ratio);
  double preheat_threshold(const std::string& api_type) const;
  void count_perturbed() { ++calls_perturbed_; }

 private:
  bool selected() const;

  CaptureConfig cfg_;
  EntryFilter filter_;
  int64_t step_ = 0;
  int64_t rank_ = 0;
  int64_t first_step_ = -1;  // the first step run, where preheat starts
  bool observing_ = false;
  uint64_t handle_ = 0;
  std::map<std::string, int64_t> calls_, sampled_;  // per API type, this step
  std::map<std::string, double> preheat_ratio_;     // per API type, largest ratio while preheating
  int64_t rows_written_ = 0;
  int64_t calls_perturbed_ = 0;
  static std::atomic<TorchFreeBenchmark*> active_;
};

}  // namespace numprobe::capture
