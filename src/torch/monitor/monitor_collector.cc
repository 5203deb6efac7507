#include "torch/monitor/monitor_collector.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "capture/stats_batch_host.h"
#include "monitor/step_rows.h"
#include "torch/device_stats.h"
#include "torch/stats_cache.h"
#include "torch/tensor_leaf.h"

namespace numprobe::capture {

using monitor::MetricGroup;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Elements with |x| < eps (x real: complex tensors arrive as magnitudes). Bool has no abs: its
// zeros are its false elements. Stays on x's device.
at::Tensor near_zero_count(const at::Tensor& x, double eps) {
  if (x.scalar_type() == c10::ScalarType::Bool) return x.logical_not().sum().to(at::kDouble);
  return x.abs().lt(eps).sum().to(at::kDouble);
}

}  // namespace

monitor::TensorSummary summarise_now(const at::Tensor& t, double eps) {
  if (!t.defined() || t.numel() == 0) return monitor::nan_summary();
  c10::AutoGradMode no_grad(false);
  const at::Tensor d = t.detach();
  TensorLeaf leaf;
  fill_tensor_leaf(d, LeafRequest(), leaf);
  leaf.resolve_stats();
  if (!leaf.has_stats) return monitor::nan_summary();
  const at::Tensor x = d.is_complex() ? d.abs() : d;
  double zeros = kNaN;
  try {
    zeros = near_zero_count(x, eps).item<double>() / static_cast<double>(d.numel());
  } catch (const c10::Error&) {
    // a dtype without the ops: zeros stays nan
  }
  return monitor::stats_summary(leaf.stats, zeros);
}

struct MonitorCollector::Pending {
  MetricGroup group;
  monitor::MetricRow row;
  TensorStats stats;  // CPU tensors: computed at add()
  bool has_stats = false;
  double near_zero = kNaN;  // CPU tensors: count of |x| < eps (when ops ask for zeros)
  int64_t slot = -1;        // device tensors: index of its reductions in device_
  uint64_t count = 0;       // elements summarised
  bool given = false;       // row.summary is final (add_value)
};

namespace {

// NUMPROBE_MONITOR_DEVICE_ROUTE=1 sends CPU tensors through the device route (reductions by ATen,
// fetched in one transfer at finish_step): how tests on machines without a GPU exercise it.
bool device_route(const at::Tensor& t) {
  static const bool forced = env_flag("NUMPROBE_MONITOR_DEVICE_ROUTE");
  return !t.device().is_cpu() || t.layout() != c10::kStrided || forced;
}

}  // namespace

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
    at::Tensor d = t.detach();
    if (d.is_complex()) d = d.abs();  // summarised by magnitudes, as capture does
    p.count = static_cast<uint64_t>(d.numel());
    if (device_route(d)) {
      try {
        // Eight reductions (+ the near-zero count) stay on the device until finish_step.
        at::Tensor r = device_reductions(d);
        if (want_zeros_) r = at::cat({r, near_zero_count(d, config_.eps).reshape({1})});
        p.slot = static_cast<int64_t>(device_.size());
        device_.push_back(std::move(r));
      } catch (const c10::Error&) {
        p.count = 0;  // a dtype ATen cannot reduce: a row of nan
      }
    } else {
      TensorLeaf leaf;
      fill_tensor_leaf(d, LeafRequest(), leaf);
      leaf.resolve_stats();
      p.has_stats = leaf.has_stats;
      p.stats = leaf.stats;
      if (want_zeros_) {
        try {
          p.near_zero = near_zero_count(d, config_.eps).item<double>();
        } catch (const c10::Error&) {
          // a dtype without the ops (a summary must never stop training): zeros stays nan
        }
      }
    }
  }
  rows_.push_back(std::move(p));
}

void MonitorCollector::add_value(MetricGroup group, const std::string& name, double value) {
  Pending p;
  p.group = group;
  p.row.name = name;
  p.row.call_id = static_cast<int64_t>(rows_.size());
  p.row.summary = monitor::scalar_summary(value, config_.eps);
  p.given = true;
  rows_.push_back(std::move(p));
}

std::vector<monitor::AnomalyEvent> MonitorCollector::finish_step(int64_t step) {
  // Device reductions come back in one transfer per device (the only wait for the device).
  std::vector<at::Tensor> host(device_.size());
  std::map<std::pair<int, int>, std::vector<size_t>> by_device;  // (device type, index) -> slots
  for (size_t i = 0; i < device_.size(); ++i) {
    const c10::Device dev = device_[i].device();
    by_device[{static_cast<int>(dev.type()), static_cast<int>(dev.index())}].push_back(i);
  }
  for (const auto& [device, slots] : by_device) {
    std::vector<at::Tensor> parts;
    for (size_t i : slots) parts.push_back(device_[i]);
    const at::Tensor arrived = at::stack(parts).to(at::kCPU).contiguous();
    for (size_t k = 0; k < slots.size(); ++k) host[slots[k]] = arrived[static_cast<int64_t>(k)];
  }
  device_.clear();

  last_rows_.clear();
  for (auto& p : rows_) {
    if (p.slot >= 0) {
      const double* v = host[p.slot].data_ptr<double>();
      p.stats = capture::stats_batch::stats_of_fields(v, p.count);
      p.has_stats = true;
      if (want_zeros_) p.near_zero = v[8];
    }
    if (p.has_stats) {
      p.row.summary = monitor::stats_summary(
          p.stats, want_zeros_ ? p.near_zero / static_cast<double>(p.count) : kNaN);
    } else if (!p.given) {
      p.row.summary = monitor::nan_summary();  // undefined or empty tensor: msprobe writes nan
      p.row.no_tensor = true;
    }
    last_rows_.emplace_back(p.group, std::move(p.row));
  }
  rows_.clear();
  // Tensors freed during the step may give their addresses to new ones: the cache forgets them.
  next_stats_generation();
  return monitor::write_step_rows(*sink_, step, last_rows_);
}

void MonitorCollector::forget_cached_stats() {
  next_stats_generation();
}

void MonitorCollector::discard_step() {
  rows_.clear();
  device_.clear();
  next_stats_generation();
}

void MonitorCollector::close() {
  rows_.clear();
  device_.clear();
  sink_->close();
}

}  // namespace numprobe::capture
