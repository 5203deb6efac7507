#include "monitor_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <string>

#include "../common/monitor_py.h"
#include "numprobe/error.h"
#include "torch/monitor/monitor_collector.h"

namespace py = pybind11;

namespace numprobe::python {

namespace {

using capture::MonitorCollector;
using monitor::MetricGroup;

// Python passes tensors as objects: unpacked without pybind's caster (one check, no copy).
const at::Tensor& tensor_arg(py::handle obj) {
  static const at::Tensor undefined;
  if (obj.is_none()) return undefined;
  if (!THPVariable_Check(obj.ptr())) throw py::type_error("numprobe monitor: expected a tensor");
  return THPVariable_Unpack(obj.ptr());
}

}  // namespace

void register_monitor(py::module_& m) {
  python_common::register_monitor_basics(m);

  m.def(
      "monitor_tensor_summary",
      [](py::handle tensor, double eps) {
        return python_common::monitor_summary_dict(capture::summarise_now(tensor_arg(tensor), eps));
      },
      "Every monitor op of one tensor, now (waits for its device).");

  py::class_<MonitorCollector>(m, "MonitorCollector")
      .def(py::init([](const std::string& text, const std::string& source,
                       const std::string& output_base, int64_t rank) {
        return std::make_unique<MonitorCollector>(monitor::parse_monitor_config(text, source),
                                                  output_base, rank);
      }))
      .def("run_dir", &MonitorCollector::run_dir)
      .def(
          "add",
          [](MonitorCollector& c, int group, const std::string& name, int64_t micro_step,
             py::handle tensor) {
            c.add(python_common::monitor_group_arg(group), name, micro_step, tensor_arg(tensor));
          },
          py::arg("group"), py::arg("name"), py::arg("micro_step"), py::arg("tensor"))
      .def(
          "add_many",
          [](MonitorCollector& c, int group, const std::vector<std::string>& names,
             py::sequence tensors) {
            // One call for a whole optimizer-step loop (reduced gradients, moments, parameters):
            // the per-call cost of Python is paid once, not once per parameter.
            const MetricGroup g = python_common::monitor_group_arg(group);
            if (static_cast<size_t>(py::len(tensors)) != names.size())
              throw numprobe::Error("numprobe monitor: add_many needs one name per tensor");
            for (size_t i = 0; i < names.size(); ++i) {
              py::handle t = tensors[i];
              if (!t.is_none()) c.add(g, names[i], -1, tensor_arg(t));
            }
          },
          py::arg("group"), py::arg("names"), py::arg("tensors"))
      .def("add_value",
           [](MonitorCollector& c, int group, const std::string& name, double value) {
             c.add_value(python_common::monitor_group_arg(group), name, value);
           })
      .def("set_group", &MonitorCollector::set_group)
      .def("pending_rows", &MonitorCollector::pending_rows)
      .def("finish_step",
           [](MonitorCollector& c, int64_t step) {
             return python_common::monitor_anomalies_list(c.finish_step(step));
           })
      .def("last_rows",
           [](const MonitorCollector& c) {
             return python_common::monitor_rows_list(c.last_rows(), c.config());
           })
      .def("forget_cached_stats", &MonitorCollector::forget_cached_stats)
      .def("discard_step", &MonitorCollector::discard_step)
      .def("close", &MonitorCollector::close);
}

}  // namespace numprobe::python
