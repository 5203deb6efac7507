// numprobe._engine's acc-check functions (acc_check_module.h). The verdict code is numprobe's
// acc-check engine (src/acc_check), the one the torch replay calls through numprobe._C: the same
// metrics, standards and CSV files whichever framework replayed the API.
#include "acc_check_module.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "../common/acc_check_py.h"
#include "numprobe/acc_check.h"
#include "numprobe/error.h"

namespace py = pybind11;

namespace numprobe::pyengine {
namespace {

// "(2, 8)" as Python prints a tuple ("(8,)" for one dimension).
std::string python_tuple(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The bench (float64) and device arrays, each float64 or float32 (the caller widens float16 and
// narrower kinds); `*_kind` is the torch dtype name the standards and thresholds are chosen by,
// `*_name` what the CSV shows (MindSpore's spelling).
AccColumns compare_arrays(const std::string& op, const py::array& bench, const py::array& device,
                          const std::string& bench_kind, const std::string& device_kind,
                          const std::string& bench_name, const std::string& device_name) {
  auto view = [](const py::array& a, const std::string& kind) {
    if (py::isinstance<py::array_t<double>>(a))
      return AccTensorView(static_cast<const double*>(a.data()), static_cast<size_t>(a.size()),
                           kind);
    if (py::isinstance<py::array_t<float>>(a))
      return AccTensorView(static_cast<const float*>(a.data()), static_cast<size_t>(a.size()),
                           kind);
    throw py::type_error("acc_compare: arrays must be float64 or float32");
  };
  if (!(bench.flags() & py::array::c_style) || !(device.flags() & py::array::c_style))
    throw py::value_error("acc_compare: arrays must be C-contiguous");
  AccColumns c;
  bool same_shape = bench.ndim() == device.ndim();
  for (py::ssize_t i = 0; same_shape && i < bench.ndim(); ++i)
    same_shape = bench.shape(i) == device.shape(i);
  if (!same_shape) {
    c = acc_unusable_output(AccStatus::kError, "The shape of bench" + python_tuple(bench) +
                                                   " and npu" + python_tuple(device) +
                                                   " not equal.");
  } else {
    c = acc_compare_output(op, view(bench, bench_kind), view(device, device_kind),
                           python_tuple(device));
  }
  c.bench_dtype = bench_name;
  c.device_dtype = device_name;
  c.shape = python_tuple(device);
  return c;
}

}  // namespace

void register_acc_check(py::module_& m) {
  python_common::register_acc_common(m);
  m.def("acc_compare", &compare_arrays, py::arg("op"), py::arg("bench"), py::arg("device"),
        py::arg("bench_kind"), py::arg("device_kind"), py::arg("bench_name"),
        py::arg("device_name"),
        "msprobe's metrics and numprobe's verdict of one output (bench: the reference).");
}

}  // namespace numprobe::pyengine
