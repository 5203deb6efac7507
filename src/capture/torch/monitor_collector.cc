#include "capture/torch/monitor_collector.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "capture/torch/stats_cache.h"
#include "capture/torch/tensor_leaf.h"

namespace numprobe::capture {

using monitor::MetricGroup;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The groups in the order msprobe writes a step's files (step_final_hook).
constexpr MetricGroup kWriteOrder[] = {
    MetricGroup::kActv,        MetricGroup::kActvGrad,     MetricGroup::kGradUnreduced,
    MetricGroup::kGradReduced, MetricGroup::kExpAvg,       MetricGroup::kExpAvgSq,
    MetricGroup::kParamOrigin, MetricGroup::kParamUpdated, MetricGroup::kOther};

monitor::TensorSummary all_nan() {
  monitor::TensorSummary s;
  s.min = s.max = s.mean = s.norm = s.zeros = s.nans = s.infs = kNaN;
  return s;
}

}  // namespace

monitor::TensorSummary summarise_now(const at::Tensor& t, double eps) {
  if (!t.defined() || t.numel() == 0) return all_nan();
  c10::AutoGradMode no_grad(false);
  const at::Tensor d = t.detach();
  TensorLeaf leaf;
  fill_tensor_leaf(d, LeafRequest(), leaf);
  leaf.resolve_stats();
  if (!leaf.has_stats) return all_nan();
  const TensorStats& st = leaf.stats;
  monitor::TensorSummary s;
  s.min = st.min;
  s.max = st.max;
  s.mean = st.mean();
  s.norm = st.norm();
  s.nans = static_cast<double>(st.nan_count);
  s.infs = static_cast<double>(st.pos_inf_count + st.neg_inf_count);
  const at::Tensor x = d.is_complex() ? d.abs() : d;
  s.zeros = x.abs().lt(eps).sum().to(at::kDouble).item<double>() / static_cast<double>(d.numel());
  return s;
}

struct MonitorCollector::Pending {
  MetricGroup group;
  monitor::MetricRow row;
  TensorLeaf leaf;  // statistics, or their deferred values (device tensors)
  bool has_leaf = false;
  at::Tensor near_zero;  // count of |x| < eps (device tensors: still there); undefined: none
  uint64_t count = 0;    // elements summarised
  bool given = false;    // row.summary is final (add_value)
};

MonitorCollector::MonitorCollector(const monitor::MonitorConfig& config,
                                   const std::string& output_base, int64_t rank)
    : config_(config),
      sink_(std::make_unique<monitor::MetricSink>(output_base, rank, config)),
      want_zeros_(std::find(config.ops.begin(), config.ops.end(), "zeros") != config.ops.end()) {}

MonitorCollector::~MonitorCollector() = default;

const std::string& MonitorCollector::run_dir() const {
  return sink_->run_dir();
}

void MonitorCollector::set_group(int64_t pp_stage, std::vector<int64_t> group_mates) {
  sink_->set_group(pp_stage, std::move(group_mates));
}

size_t MonitorCollector::pending_rows() const {
  return rows_.size();
}

void MonitorCollector::add(MetricGroup group, const std::string& name, int64_t micro_step,
                           const at::Tensor& t) {
  Pending p;
  p.group = group;
  // msprobe's row names carry the micro-batch: "0:fc1.input:1" (the CSV's micro_step column).
  p.row.name = micro_step >= 0 ? name + ":" + std::to_string(micro_step) : name;
  p.row.micro_step = micro_step;
  p.row.call_id = static_cast<int64_t>(rows_.size());
  if (t.defined() && t.numel() > 0) {
    // Summaries are not part of the model's graph, and must not be recorded by a capture that
    // runs at the same time.
    c10::AutoGradMode no_grad(false);
    const at::Tensor d = t.detach();
    fill_tensor_leaf(d, LeafRequest(), p.leaf);
    p.has_leaf = p.leaf.has_stats;
    p.count = static_cast<uint64_t>(d.numel());
    if (want_zeros_) {
      at::Tensor x = d.is_complex() ? d.abs() : d;
      p.near_zero = x.abs().lt(config_.eps).sum();  // stays on x's device until finish_step
    }
  }
  rows_.push_back(std::move(p));
}

void MonitorCollector::add_value(MetricGroup group, const std::string& name, double value) {
  Pending p;
  p.group = group;
  p.row.name = name;
  p.row.call_id = static_cast<int64_t>(rows_.size());
  auto& s = p.row.summary;
  s.min = s.max = s.mean = value;
  s.norm = std::fabs(value);
  s.zeros = std::fabs(value) < config_.eps ? 1.0 : 0.0;
  s.nans = std::isnan(value) ? 1 : 0;
  s.infs = std::isinf(value) ? 1 : 0;
  p.given = true;
  rows_.push_back(std::move(p));
}

std::vector<monitor::AnomalyEvent> MonitorCollector::finish_step(int64_t step) {
  // Device counts of near-zero elements come back in one transfer.
  std::vector<at::Tensor> on_device;
  for (auto& p : rows_)
    if (p.near_zero.defined() && !p.near_zero.device().is_cpu()) on_device.push_back(p.near_zero);
  at::Tensor host_counts;
  if (!on_device.empty()) host_counts = at::stack(on_device).to(at::kDouble).to(at::kCPU);
  int64_t next_device = 0;

  last_rows_.clear();
  std::vector<std::vector<monitor::MetricRow>> by_group(std::size(kWriteOrder));
  for (auto& p : rows_) {
    if (p.has_leaf) {
      p.leaf.resolve_stats();
      const TensorStats& st = p.leaf.stats;
      auto& s = p.row.summary;
      s.min = st.min;
      s.max = st.max;
      s.mean = st.mean();
      s.norm = st.norm();
      s.nans = static_cast<double>(st.nan_count);
      s.infs = static_cast<double>(st.pos_inf_count + st.neg_inf_count);
      s.zeros = kNaN;
      if (p.near_zero.defined()) {
        const double n = p.near_zero.device().is_cpu() ? p.near_zero.to(at::kDouble).item<double>()
                                                       : host_counts[next_device++].item<double>();
        s.zeros = n / static_cast<double>(p.count);
      }
    } else if (!p.given) {
      p.row.summary = all_nan();  // undefined or empty tensor: msprobe writes nan
      p.row.no_tensor = true;
    }
    last_rows_.emplace_back(p.group, p.row);
    for (size_t g = 0; g < std::size(kWriteOrder); ++g)
      if (kWriteOrder[g] == p.group) by_group[g].push_back(std::move(p.row));
  }
  rows_.clear();
  for (size_t g = 0; g < std::size(kWriteOrder); ++g)
    if (!by_group[g].empty()) sink_->write(kWriteOrder[g], step, by_group[g]);
  // Tensors freed during the step may give their addresses to new ones: the cache forgets them.
  next_stats_generation();
  return sink_->end_step(step);
}

void MonitorCollector::discard_step() {
  rows_.clear();
  next_stats_generation();
}

void MonitorCollector::close() {
  rows_.clear();
  sink_->close();
}

}  // namespace numprobe::capture
