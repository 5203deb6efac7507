#include "grad_probe_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <string>
#include <vector>

#include "capture/capture_config.h"
#include "grad_probe/grad_probe_writer.h"
#include "numprobe/error.h"
#include "torch/dtype_names.h"

namespace py = pybind11;

namespace numprobe::python {
namespace {

using grad_probe::GradProbeWriter;

// One optimizer step's gradients: statistics and direction bits computed from each tensor's memory
// by the engine (src/grad_probe), files written before the optimizer runs. The gradients are read,
// never written: a device or non-contiguous gradient is copied first.
void record_step(GradProbeWriter& w, int64_t step, const std::vector<std::string>& names,
                 const py::list& grads) {
  if (names.size() != grads.size())
    throw numprobe::Error("grad_probe: names and gradients differ in number");
  std::vector<at::Tensor> ts;
  ts.reserve(grads.size());
  for (py::handle g : grads) {
    if (!THPVariable_Check(g.ptr())) throw py::type_error("grad_probe: expected a tensor");
    ts.push_back(THPVariable_Unpack(g.ptr()).detach());
  }
  py::gil_scoped_release nogil;
  w.begin_step(step);
  for (size_t i = 0; i < ts.size(); ++i) {
    at::Tensor t = ts[i];
    if (t.is_sparse()) t = t.to_dense();
    if (!t.device().is_cpu()) t = t.cpu();
    t = t.contiguous();
    const auto sizes = t.sizes();
    w.add(names[i], t.data_ptr(), static_cast<size_t>(t.numel()), to_dtype(t.scalar_type()),
          std::vector<int64_t>(sizes.begin(), sizes.end()));
  }
  w.end_step();
}

}  // namespace

void register_grad_probe(py::module_& m) {
  py::class_<GradProbeWriter>(m, "GradProbe")
      .def(py::init([](const std::string& config_text, const std::string& source, int64_t rank) {
        return std::make_unique<GradProbeWriter>(capture::parse_capture_config(config_text, source),
                                                 rank);
      }))
      .def("step_selected", &GradProbeWriter::step_selected)
      .def("param_selected", &GradProbeWriter::param_selected)
      .def("rank_selected",
           [](GradProbeWriter& w, int64_t r) { return capture::rank_selected(w.config(), r); })
      .def("dump_path", [](GradProbeWriter& w) { return w.config().dump_path; })
      .def("level",
           [](GradProbeWriter& w) {
             return std::string(capture::grad_level_name(w.config().grad_probe.level));
           })
      .def("flush", &GradProbeWriter::flush, py::call_guard<py::gil_scoped_release>(),
           "Waits until every queued file is written; raises a write error.")
      .def("record_step", &record_step,
           "Writes grad_summary_{step}.csv and, at L1/L2, step{step}/{name}.npy for the given "
           "parameters' gradients.");
}

}  // namespace numprobe::python
