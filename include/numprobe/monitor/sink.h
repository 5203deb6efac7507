// Where the monitor's metrics go: msprobe's output files (CSV or TensorBoard events) and the
// anomaly rules, shared by the Python front (numprobe.TrainerMon) and the C++ one
// (numprobe/monitor.h). Formats: docs/monitor.md.
//
// Layout (msprobe's): <output_base>/<Mon DD_HH-MM-SS>-rank<r>-<uid8>/
//   csv:          <group>_<s0>-<s1>.csv, header "vpp_stage,name,step[,micro_step],<ops...>"
//                 (micro_step for actv and actv_grad), s0..s1 the record window of
//                 step_count_per_record steps; values rounded to ndigits, NaN written "nan".
//   tensorboard:  events.out.tfevents.<time>.<host>.<pid>.0, one scalar per
//                 "<name>/rank<r>/<task>_<op>" tag (TFRecord framing, masked CRC-32C).
//   anomalies:    <output_base>/anomaly_detected/rank<r>/anomaly.json (when alert rules are set),
//                 msprobe's GradAnomalyData fields.
//
// Invariants:
//  - end_step() leaves every finished step on disk (files flushed, anomaly.json replaced
//    atomically): a killed run keeps every finished record.
//  - Rows of one group keep the order they were added in (call order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "numprobe/monitor/config.h"

namespace numprobe::monitor {

// msprobe's metric groups (the CSV file prefixes).
enum class MetricGroup {
  kActv,           // actv: module inputs/outputs
  kActvGrad,       // actv_grad: their gradients
  kGradUnreduced,  // grad_unreduced: weight gradients before the DP reduce (per micro-batch)
  kGradReduced,    // grad_reduced: weight gradients read at the optimizer step
  kExpAvg,         // exp_avg
  kExpAvgSq,       // exp_avg_sq
  kParamOrigin,    // param_origin: weights before the update
  kParamUpdated,   // param_updated: weights after it
  kOther,          // other: mg_direction, update/ratio
};
const char* group_name(MetricGroup group);
// The msprobe task name of a group as used in tags ("actv", "actv_grad", "acc_grad", "post_grad",
// "exp_avg", "exp_avg_sq", "param_origin", "param_updated", "other").
const char* group_task(MetricGroup group);

// One tensor's summary, every op msprobe knows plus numprobe's inf count, all float64.
struct TensorSummary {
  double min = 0;
  double max = 0;
  double mean = 0;
  double norm = 0;
  double zeros = 0;  // share of elements with |x| < eps
  double nans = 0;   // count
  double infs = 0;   // count of +-Inf
};
// The value of one op name of MonitorConfig::ops.
double op_value(const TensorSummary& s, const std::string& op);

struct MetricRow {
  std::string name;         // msprobe's row name, e.g. "0:fc1.weight" or "0:fc2.input:0"
  int64_t micro_step = -1;  // >= 0 for actv / actv_grad rows
  int64_t call_id = -1;     // order of the call in its step; -1: call_id_base + row index
  // No tensor behind the row (a None gradient, an output left None): written as msprobe writes
  // it (every op nan) so the files pair row for row, but never an anomaly.
  bool no_tensor = false;
  TensorSummary summary;
};

struct AnomalyEvent {
  int64_t rank = 0;
  int64_t step = 0;
  int64_t micro_step = 0;
  int64_t call_id = 0;
  std::string tag_name;  // "<name>/rank<r>/<task>"
  std::string op;
  std::string message;
};

class MetricSink {
 public:
  // output_base: $MONITOR_OUTPUT_DIR (or ./monitor_output); the run directory is made under it.
  MetricSink(const std::string& output_base, int64_t rank, const MonitorConfig& config);
  ~MetricSink();
  MetricSink(const MetricSink&) = delete;
  MetricSink& operator=(const MetricSink&) = delete;

  const std::string& run_dir() const;
  // The pipeline stage and the ranks of this rank's process group, recorded in anomaly.json
  // (msprobe's pp_stage and group_mates). Defaults: 0 and {rank}.
  void set_group(int64_t pp_stage, std::vector<int64_t> group_mates);

  // The rows of one group for one step (call order). call_id_base numbers them for the anomaly
  // order (row i has call id call_id_base + i).
  void write(MetricGroup group, int64_t step, const std::vector<MetricRow>& rows,
             int64_t call_id_base = 0);
  // Flushes the step's files and the anomalies found in it; returns those anomalies.
  std::vector<AnomalyEvent> end_step(int64_t step);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace numprobe::monitor
