// The torch half of the training monitor: summarises the tensors the fronts hand it (module
// activations, gradients, optimizer states, parameters) and gives each step's rows to the
// engine's MetricSink (numprobe/monitor/sink.h). Both fronts use it: numprobe.TrainerMon (Python
// hooks) and numprobe::TrainerMon (numprobe/monitor.h, libtorch programs).
//
// Invariants:
//  - add() reads each tensor once with the capture's fused statistics (tensor_leaf.h: the Highway
//    kernel on CPU memory, float64 sums); a tensor on a device is reduced there (the fused CUDA
//    kernel or ATen: eight doubles) and the reductions stay there: finish_step() stacks a step's
//    and fetches them in one transfer per device, the only wait for the device.
//  - "zeros" (the share of |x| < eps, msprobe's definition) costs one more pass, and only when the
//    config's ops ask for it.
//  - Rows keep their call order: call ids count every add() of a step.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "numprobe/monitor/config.h"
#include "numprobe/monitor/sink.h"

namespace numprobe::capture {

// t summarised now, waiting for its device if need be (explicit queries such as
// TrainerMon.generate_wgrad_metrics; never on the hooks' path). Undefined or empty: NaN.
monitor::TensorSummary summarise_now(const at::Tensor& t, double eps);

class MonitorCollector {
 public:
  MonitorCollector(const monitor::MonitorConfig& config, const std::string& output_base,
                   int64_t rank);
  ~MonitorCollector();
  MonitorCollector(const MonitorCollector&) = delete;
  MonitorCollector& operator=(const MonitorCollector&) = delete;

  const monitor::MonitorConfig& config() const { return config_; }
  const std::string& run_dir() const;

  // Summarises t (undefined: a row of NaN) as row `name` of `group` in the current step.
  void add(monitor::MetricGroup group, const std::string& name, int64_t micro_step,
           const at::Tensor& t);
  // A row holding one scalar (mg_direction): min = max = mean = norm = value.
  void add_value(monitor::MetricGroup group, const std::string& name, double value);
  // msprobe's pp_stage and group_mates of the anomaly records (sink.h).
  void set_group(int64_t pp_stage, std::vector<int64_t> group_mates);
  // Rows added since the last finish_step (0 after it).
  size_t pending_rows() const;
  // Resolves the step's statistics (one wait for the device), writes them and returns the
  // anomalies found. Rows added after a finish_step belong to the next one.
  std::vector<monitor::AnomalyEvent> finish_step(int64_t step);
  // The rows finish_step last wrote, with their groups.
  const std::vector<std::pair<monitor::MetricGroup, monitor::MetricRow>>& last_rows() const {
    return last_rows_;
  }
  // Statistics cached for tensors seen so far are not reused: parameters an optimizer updated
  // through .data keep their version counter, so after the update they must be read again.
  void forget_cached_stats();
  // Drops the rows of a step that is not written (outside the schedule).
  void discard_step();
  void close();

 private:
  struct Pending;
  monitor::MonitorConfig config_;
  std::unique_ptr<monitor::MetricSink> sink_;
  std::vector<Pending> rows_;
  std::vector<at::Tensor> device_;  // device tensors' reductions, fetched by finish_step
  std::vector<std::pair<monitor::MetricGroup, monitor::MetricRow>> last_rows_;
  bool want_zeros_ = false;
};

}  // namespace numprobe::capture
