// numprobe._C: the Python face of the capture engine. Hooks are C++ callables so that a captured
// call costs one dispatch into C++, not a Python frame (see docs/capture.md, "Overhead").
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <vector>

#include "acc_check_bindings.h"
#include "api_hook.h"
#include "capture/torch/device_stats.h"
#include "capture/torch/stats_cache.h"
#include "capture/torch/tensor_leaf.h"
#include "capture/torch/torch_capture.h"
#include "direct_mode.h"
#include "numprobe/error.h"
#include "py_values.h"

namespace py = pybind11;
using numprobe::capture::CaptureConfig;
using numprobe::capture::EntryRecord;
using numprobe::capture::InternalGuard;
using numprobe::capture::TorchCapture;
using numprobe::python::add_pyitems;
using numprobe::python::add_pyobject;
using numprobe::python::add_pyoutput;
using numprobe::python::ApiInfo;
using numprobe::python::for_each_str_item;

namespace {

void append_int(std::string& s, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

// Hooks of one nn.Module (L0 / mix). Forward calls of the same module nest and their backward
// runs in reverse order, so a per-module stack pairs each backward with its forward call.
class ModuleRecorder {
 public:
  explicit ModuleRecorder(std::string name) : name_(std::move(name)), counter_{name_} {}

  // kwargs: the keyword arguments of the call where torch hands them to hooks (torch >= 2,
  // register_forward_pre_hook(with_kwargs=True)); None otherwise.
  py::object forward_pre(py::handle module, py::handle args, py::handle kwargs) {
    TorchCapture* cap = TorchCapture::active();
    Pending p;
    p.active = cap && cap->dumping() && !InternalGuard::inside();
    if (p.active) {
      p.fwd.reserve(name_.size() + 12);
      p.fwd.assign(name_).append(".forward.");
      append_int(p.fwd, counter_.next_count(*cap));
      p.parent = cap->current_parent();
      p.wanted = cap->wants(p.fwd);
      if (p.wanted) {
        InternalGuard guard;
        p.rec = cap->new_record();
        p.rec.name = p.fwd;
        p.rec.begin_dict();
        if (cap->wants_inputs()) {
          p.rec.key("input_args");
          py::object seq = py::reinterpret_steal<py::object>(PySequence_Fast(args.ptr(), ""));
          add_pyitems(*cap, p.rec, seq.ptr(), cap->stem(p.fwd, "input"), false);
          p.rec.key("input_kwargs");
          p.rec.begin_dict();
          if (PyDict_Check(kwargs.ptr())) {
            const std::string stem = cap->stem(p.fwd, "input");
            for_each_str_item(kwargs.ptr(), [&](const char* key, PyObject* v) {
              p.rec.key(key);
              add_pyobject(*cap, p.rec, v, cap->stem(stem, key), false, 1);
            });
          }
          p.rec.end();
        }
      }
      cap->add_construct(p.fwd, p.parent);
      TorchCapture::module_stack().push_back(p.fwd);
    }
    pending_.push_back(std::move(p));
    return py::none();
  }

  py::object forward(py::handle module, py::handle args, py::handle output) {
    if (pending_.empty()) return py::none();
    Pending p = std::move(pending_.back());
    pending_.pop_back();
    if (!p.active) return py::none();
    auto& stack = TorchCapture::module_stack();
    if (!stack.empty()) stack.pop_back();
    TorchCapture* cap = TorchCapture::active();
    if (!cap) return py::none();
    backward_names_.push_back(
        {TorchCapture::backward_of(p.fwd), p.parent, p.wanted, nested_output_leaves(output)});
    if (!p.wanted || !cap->wants_direction(true)) return py::none();
    InternalGuard guard;
    if (cap->wants_outputs()) {
      p.rec.key("output");
      add_pyoutput(*cap, p.rec, output.ptr(), cap->stem(p.fwd, "output"));
    }
    py::object params =
        py::reinterpret_steal<py::object>(PyObject_GetAttrString(module.ptr(), "_parameters"));
    if (params && PyDict_Check(params.ptr()) && PyDict_GET_SIZE(params.ptr()) > 0) {
      p.rec.key("parameters");
      p.rec.begin_dict();
      const std::string stem = cap->stem(p.fwd, "parameters");
      for_each_str_item(params.ptr(), [&](const char* name, PyObject* v) {
        if (v == Py_None) return;
        p.rec.key(name);
        add_pyobject(*cap, p.rec, v, cap->stem(stem, name), false, 1);
      });
      p.rec.end();
    } else {
      PyErr_Clear();
    }
    // msprobe writes the recomputation flag last in a module's forward entry.
    p.rec.key("is_recompute");
    p.rec.boolean(false);
    p.rec.end();
    cap->submit(std::move(p.rec), true, p.parent);
    return py::none();
  }

  py::object backward(py::handle module, py::handle grad_input, py::handle grad_output) {
    TorchCapture* cap = TorchCapture::active();
    if (backward_names_.empty()) return py::none();
    Backward b = std::move(backward_names_.back());
    backward_names_.pop_back();
    if (!cap || !cap->dumping() || !b.wanted || !cap->wants_direction(false)) return py::none();
    InternalGuard guard;
    EntryRecord rec = cap->new_record();
    rec.name = b.name;
    rec.begin_dict();
    if (cap->wants_inputs()) {
      rec.key("input");
      py::object grads = flatten_grad_output(grad_output, b.output_leaves);
      add_pyitems(*cap, rec, grads.ptr(), cap->stem(b.name, "input"), false);
    }
    if (cap->wants_outputs()) {
      rec.key("output");
      add_pyitems(*cap, rec, grad_input.ptr(), cap->stem(b.name, "output"), true);
    }
    rec.end();
    auto parent =
        b.parent ? std::optional<std::string>(TorchCapture::backward_of(*b.parent)) : std::nullopt;
    cap->add_construct(b.name, parent);
    cap->submit(std::move(rec), false, parent);
    return py::none();
  }

  // A new step: forward calls whose backward never ran must not pair with the next step's.
  void reset() {
    pending_.clear();
    backward_names_.clear();
  }

 private:
  struct Pending {
    bool active = false, wanted = false;
    std::string fwd;
    std::optional<std::string> parent;
    EntryRecord rec;
  };
  struct Backward {
    std::string name;
    std::optional<std::string> parent;
    bool wanted;
    std::vector<int> output_leaves;  // see nested_output_leaves
  };

  // Tensors inside each top-level item of a module's output when one item nests several
  // (nn.LSTM returns (output, (h_n, c_n))); empty otherwise. torch's full backward hook hands one
  // gradient per top-level item, None for a nested one; msprobe writes one per tensor, so the
  // backward entry's "input" lists a null for each tensor of such an item.
  static std::vector<int> nested_output_leaves(py::handle output) {
    if (!PyTuple_Check(output.ptr()) && !PyList_Check(output.ptr())) return {};
    std::vector<int> leaves;
    bool nested = false;
    for (py::handle item : output) {
      const int n = tensor_leaves(item, 0);
      nested |= n > 1 || (n == 0 && (PyTuple_Check(item.ptr()) || PyList_Check(item.ptr())));
      leaves.push_back(std::max(n, 1));
    }
    return nested ? leaves : std::vector<int>();
  }
  static int tensor_leaves(py::handle obj, int depth) {
    if (THPVariable_Check(obj.ptr())) return 1;
    if (depth > 8 || (!PyTuple_Check(obj.ptr()) && !PyList_Check(obj.ptr()))) return 0;
    int n = 0;
    for (py::handle item : obj) n += tensor_leaves(item, depth + 1);
    return n;
  }
  static py::object flatten_grad_output(py::handle grad_output, const std::vector<int>& leaves) {
    if (leaves.empty() || !PyTuple_Check(grad_output.ptr()) ||
        static_cast<size_t>(PyTuple_GET_SIZE(grad_output.ptr())) != leaves.size())
      return py::reinterpret_borrow<py::object>(grad_output);
    py::list flat;
    size_t i = 0;
    for (py::handle g : grad_output) {
      const int n = leaves[i++];
      if (n > 1 && g.is_none()) {
        for (int k = 0; k < n; ++k) flat.append(py::none());
      } else {
        flat.append(g);
      }
    }
    return py::tuple(flat);
  }
  std::string name_;
  ApiInfo counter_;  // the module's call counter
  std::vector<Pending> pending_;
  std::vector<Backward> backward_names_;
};

// Gradients of one module's own parameters, gathered into "<module>.parameters_grad.<k>" once
// every parameter that requires grad has received its gradient in this backward pass.
class ParamGradRecorder {
 public:
  ParamGradRecorder(std::string module_name, int expected)
      : name_(std::move(module_name)), expected_(expected) {}

  void on_grad(const std::string& pname, py::handle grad) {
    TorchCapture* cap = TorchCapture::active();
    if (!cap || !cap->dumping() || !cap->wants_direction(false)) return;
    InternalGuard guard;
    if (got_ == 0) {
      rec_ = EntryRecord();
      rec_.begin_dict();
    }
    // Named after the counter at completion; files use a provisional stem.
    rec_.key(pname);
    rec_.begin_list();
    add_pyobject(*cap, rec_, grad.ptr(), cap->stem(name_ + ".parameters_grad", pname), false, 1);
    rec_.end();
    if (++got_ < expected_) return;
    got_ = 0;
    rec_.end();
    rec_.name = name_ + ".parameters_grad." +
                std::to_string(cap->session().next_count(name_ + ".parameters_grad"));
    cap->submit(std::move(rec_), false, std::nullopt);
  }
  void reset() { got_ = 0; }

 private:
  std::string name_;
  int expected_;
  int got_ = 0;
  EntryRecord rec_;
};

// Tensors returned by torch's BackwardHook (full module backward hooks) are views created in a
// custom Function, which autograd forbids modifying in place (ReLU(inplace=True), `out += x`).
// Marking them ordinary views lets such models run; the module backward hook of a module whose
// output is then modified in place may not fire (msprobe does the same and documents it).
void allow_inplace_on_views(py::handle obj, int depth = 0) {
  if (depth > 8) return;
  if (THPVariable_Check(obj.ptr())) {
    const at::Tensor& t = THPVariable_Unpack(obj.ptr());
    if (t.defined() && t.is_view()) {
      if (auto* meta = torch::autograd::impl::get_view_autograd_meta(t)) {
        if (meta->has_bw_view() &&
            meta->get_creation_meta() == torch::autograd::CreationMeta::IN_CUSTOM_FUNCTION)
          meta->set_creation_meta(torch::autograd::CreationMeta::DEFAULT);
      }
    }
    return;
  }
  if (PyTuple_Check(obj.ptr()) || PyList_Check(obj.ptr()))
    for (auto item : obj) allow_inplace_on_views(item, depth + 1);
}

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
             return d;
           })
      .def(
          "close", [](Engine& e) { e.cap.reset(); }, py::call_guard<py::gil_scoped_release>());

  numprobe::python::register_api_hook(m);
  m.def("allow_inplace_on_views", [](py::handle obj) { allow_inplace_on_views(obj); });
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

  py::class_<ModuleRecorder>(m, "ModuleRecorder")
      .def(py::init<std::string>())
      .def("forward_pre", &ModuleRecorder::forward_pre, py::arg("module"), py::arg("args"),
           py::arg("kwargs") = py::none())
      .def("forward", &ModuleRecorder::forward)
      .def("backward", &ModuleRecorder::backward)
      .def("reset", &ModuleRecorder::reset);
  py::class_<ParamGradRecorder>(m, "ParamGradRecorder")
      .def(py::init<std::string, int>())
      .def("on_grad", &ParamGradRecorder::on_grad)
      .def("reset", &ParamGradRecorder::reset);
}
