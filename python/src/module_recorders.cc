// Module hooks as C++ objects (levels L0 and mix): the forward/backward recorder of one nn.Module
// and the gatherer of its parameters' gradients, so that a hooked module call costs one dispatch
// into C++, not a Python frame.
#include "module_recorders.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <vector>

#include "api_hook.h"
#include "module_backward.h"
#include "py_values.h"
#include "torch/capture/torch_capture.h"

namespace py = pybind11;
using numprobe::capture::EntryRecord;
using numprobe::capture::InternalGuard;
using numprobe::capture::TorchCapture;
using numprobe::python::add_pyitems;
using numprobe::python::add_pyobject;
using numprobe::python::add_pyoutput;
using numprobe::python::ApiInfo;
using numprobe::python::Epoch;
using numprobe::python::for_each_str_item;
using numprobe::python::ModuleCallInputs;
using numprobe::python::observe_module_backward;
using numprobe::python::snapshot_module_inputs;

namespace {

void append_int(std::string& s, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

// Hooks of one nn.Module (L0 / mix): forward pre-hook and forward hook. Calls of the same module
// nest, so a per-module stack pairs each forward hook with its pre-hook. The backward entry of a
// call is observed on the autograd nodes the call made (module_backward.h): no backward hook.
class ModuleRecorder {
 public:
  explicit ModuleRecorder(std::string name)
      : name_(std::move(name)),
        counter_{name_},
        epoch_(std::make_shared<std::atomic<uint64_t>>()) {}

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
      if (p.wanted && cap->wants_direction(false)) p.inputs = snapshot_module_inputs(args);
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
    if (p.wanted && cap->wants_direction(false))
      observe_module_backward(std::move(p.inputs), output, TorchCapture::backward_of(p.fwd),
                              p.parent, epoch_, nested_output_leaves(output));
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

  // A new step: forward calls whose backward never ran must not pair with the next step's.
  void reset() {
    pending_.clear();
    epoch_->fetch_add(1);
  }

 private:
  struct Pending {
    bool active = false, wanted = false;
    std::string fwd;
    std::optional<std::string> parent;
    EntryRecord rec;
    ModuleCallInputs inputs;  // for the backward entry
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
  std::string name_;
  ApiInfo counter_;  // the module's call counter
  std::vector<Pending> pending_;
  Epoch epoch_;  // bumped by reset(): see module_backward.h
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

}  // namespace

namespace numprobe::python {

void register_module_recorders(pybind11::module_& m) {
  // The module hooks come off at stop(): a module left mid-forward would keep its name on the
  // stack of enclosing modules (its forward hook pops it) and parent the next step's entries.
  m.def("clear_module_stack", [] { TorchCapture::module_stack().clear(); });
  py::class_<ModuleRecorder>(m, "ModuleRecorder")
      .def(py::init<std::string>())
      .def("forward_pre", &ModuleRecorder::forward_pre, py::arg("module"), py::arg("args"),
           py::arg("kwargs") = py::none())
      .def("forward", &ModuleRecorder::forward)
      .def("reset", &ModuleRecorder::reset);
  py::class_<ParamGradRecorder>(m, "ParamGradRecorder")
      .def(py::init<std::string, int>())
      .def("on_grad", &ParamGradRecorder::on_grad)
      .def("reset", &ParamGradRecorder::reset);
}

}  // namespace numprobe::python
