// Module hooks as C++ objects (levels L0 and mix): the forward/backward recorder of one nn.Module
// and the gatherer of its parameters' gradients, so that a hooked module call costs one dispatch
// into C++, not a Python frame.
#include "module_recorders.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <vector>

#include "api_hook.h"
#include "torch/capture/torch_capture.h"
#include "py_values.h"

namespace py = pybind11;
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

}  // namespace

namespace numprobe::python {

void register_module_recorders(pybind11::module_& m) {
  m.def("allow_inplace_on_views", [](py::handle obj) { allow_inplace_on_views(obj); });
  // The module hooks come off at stop(): a module left mid-forward would keep its name on the
  // stack of enclosing modules (its forward hook pops it) and parent the next step's entries.
  m.def("clear_module_stack", [] { TorchCapture::module_stack().clear(); });
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

}  // namespace numprobe::python
