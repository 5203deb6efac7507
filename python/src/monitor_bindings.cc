#include "monitor_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <string>

#include "monitor/param_name.h"
#include "numprobe/error.h"
#include "numprobe/monitor/config.h"
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

MetricGroup group_arg(int g) {
  if (g < 0 || g > static_cast<int>(MetricGroup::kOther))
    throw numprobe::Error("numprobe monitor: no metric group " + std::to_string(g));
  return static_cast<MetricGroup>(g);
}

py::list anomalies_list(const std::vector<monitor::AnomalyEvent>& events) {
  py::list out;
  for (const auto& e : events) {
    py::dict d;
    d["rank"] = e.rank;
    d["step"] = e.step;
    d["micro_step"] = e.micro_step;
    d["call_id"] = e.call_id;
    d["tag_name"] = e.tag_name;
    d["op"] = e.op;
    d["message"] = e.message;
    out.append(d);
  }
  return out;
}

py::dict summary_dict(const monitor::TensorSummary& s) {
  py::dict d;
  for (const char* op : {"min", "max", "mean", "norm", "zeros", "nans", "infs"})
    d[op] = monitor::op_value(s, op);
  return d;
}

}  // namespace

void register_monitor(py::module_& m) {
  m.def(
      "monitor_config_json",
      [](const std::string& text, const std::string& source) {
        return monitor::monitor_config_json(monitor::parse_monitor_config(text, source));
      },
      "The monitor config.json text as canonical JSON (defaults filled); NumprobeError names "
      "the file and field of anything wrong or unsupported.");
  py::dict groups;
  for (int g = 0; g <= static_cast<int>(MetricGroup::kOther); ++g)
    groups[monitor::group_name(static_cast<MetricGroup>(g))] = g;
  m.attr("MONITOR_GROUPS") = groups;
  // The libtorch TrainerMon's own table: both fronts name rows alike.
  m.def("monitor_squash_name", &monitor::squash_param_name, py::arg("name"),
        py::arg("enable") = true,
        "msprobe's squash_param_name: what follows the first recognised container (layers., "
        "embedding., final, output, norm); the name itself when none matches or not enable.");

  m.def(
      "monitor_tensor_summary",
      [](py::handle tensor, double eps) {
        return summary_dict(capture::summarise_now(tensor_arg(tensor), eps));
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
             py::handle tensor) { c.add(group_arg(group), name, micro_step, tensor_arg(tensor)); },
          py::arg("group"), py::arg("name"), py::arg("micro_step"), py::arg("tensor"))
      .def(
          "add_many",
          [](MonitorCollector& c, int group, const std::vector<std::string>& names,
             py::sequence tensors) {
            // One call for a whole optimizer-step loop (reduced gradients, moments, parameters):
            // the per-call cost of Python is paid once, not once per parameter.
            const MetricGroup g = group_arg(group);
            if (static_cast<size_t>(py::len(tensors)) != names.size())
              throw numprobe::Error("numprobe monitor: add_many needs one name per tensor");
            for (size_t i = 0; i < names.size(); ++i) {
              py::handle t = tensors[i];
              if (!t.is_none()) c.add(g, names[i], -1, tensor_arg(t));
            }
          },
          py::arg("group"), py::arg("names"), py::arg("tensors"))
      .def("add_value", [](MonitorCollector& c, int group, const std::string& name,
                           double value) { c.add_value(group_arg(group), name, value); })
      .def("set_group", &MonitorCollector::set_group)
      .def("pending_rows", &MonitorCollector::pending_rows)
      .def("finish_step",
           [](MonitorCollector& c, int64_t step) { return anomalies_list(c.finish_step(step)); })
      .def("last_rows",
           [](const MonitorCollector& c) {
             py::list out;
             for (const auto& [group, row] : c.last_rows()) {
               py::dict d;
               d["group"] = monitor::group_name(group);
               d["name"] = row.name;
               d["micro_step"] = row.micro_step;
               py::dict ops;
               for (const auto& op : c.config().ops)
                 ops[op.c_str()] = monitor::op_value(row.summary, op);
               d["ops"] = ops;
               out.append(d);
             }
             return out;
           })
      .def("forget_cached_stats", &MonitorCollector::forget_cached_stats)
      .def("discard_step", &MonitorCollector::discard_step)
      .def("close", &MonitorCollector::close);
}

}  // namespace numprobe::python
