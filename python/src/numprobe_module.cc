// numprobe._C: the Python face of the capture engine (the module definition; the API hook is
// api_hook.cc, the module and parameter-gradient recorders module_recorders.cc). Hooks are C++
// callables so that a captured call costs one dispatch into C++, not a Python frame (see
// docs/capture.md, "Overhead").
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <vector>

#include "acc_check_bindings.h"
#include "api_hook.h"
#include "direct_mode.h"
#include "free_benchmark_bindings.h"
#include "grad_probe_bindings.h"
#include "module_recorders.h"
#include "monitor_bindings.h"
#include "numprobe/error.h"
#include "py_values.h"
#include "torch/capture/torch_capture.h"
#include "torch/device_stats.h"
#include "torch/stats_cache.h"
#include "torch/tensor_leaf.h"

namespace py = pybind11;
using numprobe::capture::EntryRecord;
using numprobe::capture::InternalGuard;
using numprobe::capture::TorchCapture;
using numprobe::python::add_pyobject;

namespace {

struct Engine {
  std::unique_ptr<TorchCapture> cap;
};

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "numprobe capture engine (C++)";
  py::register_exception<numprobe::Error>(m, "NumprobeError", PyExc_ValueError);
  numprobe::python::register_acc_check(m);

  m.def(
      "check_config",
      [](const std::string& text, const std::string& source) {
        numprobe::capture::parse_capture_config(text, source);
      },
      "Raises NumprobeError naming the field when a config.json text is invalid.");

  py::class_<Engine>(m, "Engine")
      .def(py::init([](const std::string& config_text, const std::string& source) {
        auto e = std::make_unique<Engine>();
        e->cap = std::make_unique<TorchCapture>(
            numprobe::capture::parse_capture_config(config_text, source));
        // Training does not wait for a step's files to be assembled; flush()/close() do.
        e->cap->session().set_async_finish(true);
        TorchCapture::set_stack_provider(&numprobe::python::current_python_stack);
        return e;
      }))
      .def("start", [](Engine& e) { e.cap->start(); })
      .def(
          "stop", [](Engine& e) { e.cap->stop(); }, py::call_guard<py::gil_scoped_release>())
      .def(
          "step", [](Engine& e) { e.cap->step(); }, py::call_guard<py::gil_scoped_release>())
      .def("set_init_step", [](Engine& e, int64_t s) { e.cap->set_init_step(s); })
      .def("set_rank", [](Engine& e, int64_t r) { e.cap->set_rank(r); })
      .def("set_environment_info",
           [](Engine& e, const std::string& runtime, const std::string& extra) {
             e.cap->set_environment_info(runtime, extra);
           })
      .def("dumping", [](Engine& e) { return e.cap->dumping(); })
      .def(
          "flush",
          [](Engine& e) {
            e.cap->session().flush();
            if (auto err = e.cap->session().writer_error(); !err.empty())
              throw numprobe::Error("numprobe capture: " + err);
          },
          py::call_guard<py::gil_scoped_release>(),
          "Waits until everything queued is written (completed steps' files included).")
      .def("current_step", [](Engine& e) { return e.cap->session().step(); })
      .def("rank_dir", [](Engine& e) { return e.cap->session().rank_dir(); })
      .def("level",
           [](Engine& e) {
             return std::string(numprobe::capture::level_name(e.cap->config().level));
           })
      .def(
          "task",
          [](Engine& e) { return std::string(numprobe::capture::task_name(e.cap->config().task)); })
      .def("dump_path", [](Engine& e) { return e.cap->config().dump_path; })
      .def("stats",
           [](Engine& e) {
             auto s = e.cap->session().stats();
             py::dict d;
             d["entries"] = s.entries;
             d["tensor_files"] = s.tensor_files;
             d["tensor_bytes"] = s.tensor_bytes;
             d["queue_high_water"] = s.queue_high_water;
             // Statistics passes over tensor memory, leaves served by the per-version cache,
             // bytes the passes read (process-wide, all engines).
             auto c = numprobe::capture::leaf_counters();
             d["stats_computed"] = c.computed;
             d["stats_cached"] = c.cached;
             d["stats_bytes"] = c.bytes;
             // Multi-tensor launches of device statistics and the leaves they summarised.
             d["stats_batches"] = c.batches;
             d["stats_batched"] = c.batched;
             return d;
           })
      .def(
          "close", [](Engine& e) { e.cap.reset(); }, py::call_guard<py::gil_scoped_release>());

  numprobe::python::register_api_hook(m);
  m.def("cuda_stats_kernel", &numprobe::capture::cuda_stats_kernel_built,
        "True when CUDA tensors are summarised by numprobe's fused kernel (built with nvcc).");
  m.def("set_group_ranks_fn", [](py::object fn) {
    numprobe::python::set_group_ranks_fn(fn.is_none() ? nullptr : fn.ptr());
  });
  m.def(
      "set_direct_mode",
      [](py::object entry, py::object stack_dispatch) {
        auto ptr = [](const py::object& o) { return o.is_none() ? nullptr : o.ptr(); };
        numprobe::python::set_direct_mode(ptr(entry), ptr(stack_dispatch));
      },
      "Registers (or with Nones clears) the direct mode of torch 1.13: numprobe's entry on the "
      "mode stack, and torch's stack dispatch bound to the direct mode object.");
  m.def("property_shortcut_reads", &numprobe::python::property_shortcut_reads);
  m.def("property_shortcut", [](py::handle original) {
    PyObject* s = numprobe::python::new_property_shortcut(original.ptr());
    if (!s) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(s);
  });
  m.def("set_own_package_dir", &numprobe::python::set_own_package_dir);
  m.def("save", [](const std::string& name, py::handle value) {
    TorchCapture* cap = TorchCapture::active();
    if (!cap || !cap->dumping()) return;
    InternalGuard guard;
    EntryRecord rec;
    rec.name = name + "." + std::to_string(cap->session().next_count("debug:" + name));
    add_pyobject(*cap, rec, value.ptr(), rec.name, false, 0);
    cap->submit(std::move(rec), true, std::nullopt);
  });

  numprobe::python::register_module_recorders(m);
  numprobe::python::register_monitor(m);
  numprobe::python::register_free_benchmark(m);
  numprobe::python::register_grad_probe(m);
}
