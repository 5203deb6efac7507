#include "numprobe/monitor/sink.h"

#include <cmath>
#include <ctime>
#include <map>
#include <optional>

#include "base/file_util.h"
#include "monitor/anomaly_rules.h"
#include "monitor/csv_metric_writer.h"
#include "monitor/run_dir.h"
#include "monitor/tb_events.h"
#include "numprobe/error.h"
#include "numprobe/monitor/anomaly.h"

namespace numprobe::monitor {
namespace {

double now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// msprobe's vpp_stage of a row name: the integer before the first ':' (0 without one).
int64_t vpp_stage_of(const std::string& name) {
  const size_t colon = name.find(':');
  if (colon == std::string::npos || colon == 0) return 0;
  int64_t v = 0;
  for (size_t i = 0; i < colon; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

const char* group_name(MetricGroup group) {
  switch (group) {
    case MetricGroup::kActv:
      return "actv";
    case MetricGroup::kActvGrad:
      return "actv_grad";
    case MetricGroup::kGradUnreduced:
      return "grad_unreduced";
    case MetricGroup::kGradReduced:
      return "grad_reduced";
    case MetricGroup::kExpAvg:
      return "exp_avg";
    case MetricGroup::kExpAvgSq:
      return "exp_avg_sq";
    case MetricGroup::kParamOrigin:
      return "param_origin";
    case MetricGroup::kParamUpdated:
      return "param_updated";
    case MetricGroup::kOther:
      return "other";
  }
  return "other";
}

const char* group_task(MetricGroup group) {
  switch (group) {
    case MetricGroup::kGradUnreduced:
      return "acc_grad";  // msprobe's param_hook tags unreduced gradients acc_grad
    case MetricGroup::kGradReduced:
      return "post_grad";
    default:
      return group_name(group);
  }
}

double op_value(const TensorSummary& s, const std::string& op) {
  if (op == "min") return s.min;
  if (op == "max") return s.max;
  if (op == "mean") return s.mean;
  if (op == "norm") return s.norm;
  if (op == "zeros") return s.zeros;
  if (op == "nans") return s.nans;
  if (op == "infs") return s.infs;
  throw Error("monitor: unknown op '" + op + "'");
}

struct MetricSink::Impl {
  std::string base;
  int64_t rank = 0;
  MonitorConfig config;
  std::string run_dir;
  int64_t pp_stage = 0;
  std::vector<int64_t> group_mates;
  AnomalyDetector detector;
  std::map<MetricGroup, std::unique_ptr<CsvGroupFile>> csv;
  std::unique_ptr<TfEventWriter> tb;
  std::vector<AnomalyEvent> step_events;  // found since the last end_step
  std::vector<AnomalyRecord> dumped;      // every anomaly of the run, for anomaly.json
  std::string anomaly_path;               // empty: no anomaly.json
  bool closed = false;

  Impl(const std::string& b, int64_t r, const MonitorConfig& c)
      : base(b), rank(r), config(c), group_mates{r}, detector(c.alert_rules) {}

  void write_anomaly_file() {
    if (!anomaly_path.empty()) base::write_file_atomic(anomaly_path, anomaly_json(dumped));
  }
};

MetricSink::MetricSink(const std::string& output_base, int64_t rank, const MonitorConfig& config)
    : impl_(std::make_unique<Impl>(output_base, rank, config)) {
  if (config.ops.empty()) throw Error("monitor: the config names no ops");
  for (const auto& op : config.ops) op_value(TensorSummary{}, op);  // refuses unknown ops now
  impl_->run_dir = make_run_dir(output_base, rank, config.append_output);
  if (config.format == OutputFormat::kTensorboard)
    impl_->tb = std::make_unique<TfEventWriter>(impl_->run_dir);
  if (!config.alert_rules.empty() && config.alert_dump) {
    // msprobe's AnomalyDataWriter: one file per rank, started empty ({}) for this run.
    const std::string dir = output_base + "/anomaly_detected/rank" + std::to_string(rank);
    base::make_dirs(dir);
    impl_->anomaly_path = dir + "/anomaly.json";
    impl_->write_anomaly_file();
  }
}

MetricSink::~MetricSink() {
  try {
    close();
  } catch (const std::exception&) {
    // A destructor cannot report: close() explicitly to see write errors.
  }
}

const std::string& MetricSink::run_dir() const {
  return impl_->run_dir;
}

void MetricSink::set_group(int64_t pp_stage, std::vector<int64_t> group_mates) {
  impl_->pp_stage = pp_stage;
  impl_->group_mates = std::move(group_mates);
}

void MetricSink::write(MetricGroup group, int64_t step, const std::vector<MetricRow>& rows,
                       int64_t call_id_base) {
  Impl& s = *impl_;
  if (s.closed) throw Error(s.run_dir + ": monitor sink is closed");
  if (rows.empty()) return;
  const std::string task = group_task(group);
  const std::string rank_part = "/rank" + std::to_string(s.rank) + "/";
  const double wall_time = s.tb ? now_seconds() : 0;
  bool micro = group == MetricGroup::kActv || group == MetricGroup::kActvGrad;
  std::string lines;
  std::vector<double> values(s.config.ops.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const MetricRow& row = rows[i];
    micro = micro || row.micro_step >= 0;
    const std::string tag_name = row.name + rank_part + task;
    for (size_t k = 0; k < s.config.ops.size(); ++k) {
      const std::string& op = s.config.ops[k];
      values[k] = op_value(row.summary, op);
      if (s.tb) s.tb->add_scalar(tag_name + "_" + op, step, values[k], wall_time);
      if (row.no_tensor) continue;
      const auto hit = s.detector.check(tag_name, op, values[k]);
      if (!hit) continue;
      AnomalyEvent e;
      e.rank = s.rank;
      e.step = step;
      // msprobe's records carry micro step 0 (its factory never advances it); the row name keeps
      // the real one. A row's micro step would misorder a step: its rows of the optimizer stage
      // have none, and call ids already order a step's calls.
      e.micro_step = 0;
      e.call_id = row.call_id >= 0 ? row.call_id : call_id_base + static_cast<int64_t>(i);
      e.tag_name = tag_name;
      e.op = op;
      e.message = anomaly_message(*hit, tag_name, op, step, values[k]);
      if (!s.anomaly_path.empty()) {
        s.dumped.push_back({e.rank, e.step, e.micro_step, s.pp_stage, vpp_stage_of(row.name),
                            e.call_id, e.tag_name, e.message, s.group_mates});
      }
      s.step_events.push_back(std::move(e));
    }
    if (!s.tb) lines += csv_metric_line(row.name, step, values, s.config.ndigits);
  }
  if (s.tb) return;
  auto& file = s.csv[group];
  if (!file) file = std::make_unique<CsvGroupFile>(s.run_dir, group_name(group));
  file->append(step, s.config.step_count_per_record, csv_header(s.config.ops, micro), lines);
}

std::vector<AnomalyEvent> MetricSink::end_step(int64_t step) {
  Impl& s = *impl_;
  for (auto& [group, file] : s.csv) file->flush();
  if (s.tb) s.tb->flush();
  std::vector<AnomalyEvent> events;
  events.swap(s.step_events);
  if (!events.empty()) s.write_anomaly_file();
  (void)step;
  return events;
}

void MetricSink::close() {
  Impl& s = *impl_;
  if (s.closed) return;
  s.closed = true;
  for (auto& [group, file] : s.csv) file->close();
  if (s.tb) s.tb->close();
  if (!s.step_events.empty()) s.write_anomaly_file();
}

}  // namespace numprobe::monitor
