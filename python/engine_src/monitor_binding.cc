// The buffer collector: the torch collector's contract (src/torch/monitor/monitor_collector.h)
// over objects with the buffer protocol. The front hands each tensor as a numpy array over its
// values (MindSpore's asnumpy: a host copy, or a view where the tensor is on the host); the
// statistics are the engine's (float64 sums, NaN/Inf counts, the near-zero count for "zeros"),
// computed at add(), so the array may be changed or freed as soon as add() returns. Rows keep
// their call order; finish_step() writes them through the same MetricSink as the torch side.
#include "monitor_binding.h"

#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../common/monitor_py.h"
#include "monitor/step_rows.h"
#include "py_entry.h"

namespace py = pybind11;

namespace numprobe::pyengine {
namespace {

using monitor::MetricGroup;
using monitor::MetricRow;

class BufferCollector {
 public:
  BufferCollector(const monitor::MonitorConfig& config, const std::string& output_base,
                  int64_t rank)
      : config_(config), sink_(output_base, rank, config) {
    for (const auto& op : config_.ops) want_zeros_ = want_zeros_ || op == "zeros";
  }

  const monitor::MonitorConfig& config() const { return config_; }
  const std::string& run_dir() const { return sink_.run_dir(); }
  void set_group(int64_t pp_stage, std::vector<int64_t> mates) {
    sink_.set_group(pp_stage, std::move(mates));
  }
  size_t pending_rows() const { return rows_.size(); }

  // array None (no gradient, no tensor): a row of nan, never an anomaly.
  void add(MetricGroup group, const std::string& name, int64_t micro_step, py::handle array) {
    MetricRow row;
    // msprobe's row names carry the micro-batch: "0:fc1.input:1".
    row.name = micro_step >= 0 ? name + ":" + std::to_string(micro_step) : name;
    row.micro_step = micro_step;
    row.call_id = static_cast<int64_t>(rows_.size());
    row.summary = summarise(array, &row.no_tensor);
    rows_.emplace_back(group, std::move(row));
  }

  void add_value(MetricGroup group, const std::string& name, double value) {
    MetricRow row;
    row.name = name;
    row.call_id = static_cast<int64_t>(rows_.size());
    row.summary = monitor::scalar_summary(value, config_.eps);
    rows_.emplace_back(group, std::move(row));
  }

  std::vector<monitor::AnomalyEvent> finish_step(int64_t step) {
    last_rows_ = std::move(rows_);
    rows_.clear();
    return monitor::write_step_rows(sink_, step, last_rows_);
  }
  const std::vector<std::pair<MetricGroup, MetricRow>>& last_rows() const { return last_rows_; }
  void discard_step() { rows_.clear(); }
  void close() {
    rows_.clear();
    sink_.close();
  }

  // Every op of one array now (TrainerMon.generate_wgrad_metrics).
  monitor::TensorSummary summarise(py::handle array, bool* no_tensor) const {
    bool none = true;
    monitor::TensorSummary s = monitor::nan_summary();
    if (!array.is_none()) {
      TensorStats st;
      double near_zero = std::numeric_limits<double>::quiet_NaN();
      if (buffer_stats(array.ptr(), st, config_.eps, want_zeros_ ? &near_zero : nullptr)) {
        none = false;
        s = monitor::stats_summary(st, near_zero / static_cast<double>(st.count));
      }
    }
    if (no_tensor) *no_tensor = none;
    return s;
  }

 private:
  monitor::MonitorConfig config_;
  monitor::MetricSink sink_;
  bool want_zeros_ = false;
  std::vector<std::pair<MetricGroup, MetricRow>> rows_;
  std::vector<std::pair<MetricGroup, MetricRow>> last_rows_;
};

}  // namespace

void add_monitor_binding(py::module_& m) {
  python_common::register_monitor_basics(m);
  py::class_<BufferCollector>(m, "MonitorCollector")
      .def(py::init([](const std::string& text, const std::string& source,
                       const std::string& output_base, int64_t rank) {
        return std::make_unique<BufferCollector>(monitor::parse_monitor_config(text, source),
                                                 output_base, rank);
      }))
      .def("run_dir", &BufferCollector::run_dir)
      .def(
          "add",
          [](BufferCollector& c, int group, const std::string& name, int64_t micro_step,
             py::handle array) {
            c.add(python_common::monitor_group_arg(group), name, micro_step, array);
          },
          py::arg("group"), py::arg("name"), py::arg("micro_step"), py::arg("array"))
      .def(
          "add_many",
          [](BufferCollector& c, int group, const std::vector<std::string>& names,
             py::sequence arrays) {
            // One call for a whole optimizer-step loop: None (no gradient, no moment) is skipped.
            const MetricGroup g = python_common::monitor_group_arg(group);
            if (static_cast<size_t>(py::len(arrays)) != names.size())
              throw numprobe::Error("numprobe monitor: add_many needs one name per array");
            for (size_t i = 0; i < names.size(); ++i) {
              py::handle a = arrays[i];
              if (!a.is_none()) c.add(g, names[i], -1, a);
            }
          },
          py::arg("group"), py::arg("names"), py::arg("arrays"))
      .def("add_value",
           [](BufferCollector& c, int group, const std::string& name, double value) {
             c.add_value(python_common::monitor_group_arg(group), name, value);
           })
      .def("summary",
           [](const BufferCollector& c, py::handle array) {
             return python_common::monitor_summary_dict(c.summarise(array, nullptr));
           })
      .def("set_group", &BufferCollector::set_group)
      .def("pending_rows", &BufferCollector::pending_rows)
      .def("finish_step",
           [](BufferCollector& c, int64_t step) {
             return python_common::monitor_anomalies_list(c.finish_step(step));
           })
      .def("last_rows",
           [](const BufferCollector& c) {
             return python_common::monitor_rows_list(c.last_rows(), c.config());
           })
      .def("discard_step", &BufferCollector::discard_step)
      .def("close", &BufferCollector::close);
}

}  // namespace numprobe::pyengine
