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

namespace {

// One API type ("Functional.gelu") and its per-step call counter in the current session.
struct ApiInfo {
  std::string type;
  // Whether calls of this API may come from torch's hook machinery (set_internal_callers), decided
  // once: -1 not yet, 0 no, 1 yes (its callers are checked).
  int8_t from_machinery = -1;
  uint64_t session = 0;  // CaptureSession::id() the slot belongs to
  numprobe::capture::CaptureSession::CounterSlot slot = nullptr;

  int64_t next_count(TorchCapture& cap) {
    auto& s = cap.session();
    if (session != s.id()) {
      slot = s.counter_slot(type);
      session = s.id();
    }
    return numprobe::capture::CaptureSession::next_count(slot);
  }
};

// func object -> its API. Keys hold a reference (see set_api_names).
std::unordered_map<PyObject*, ApiInfo> g_api_names;

// Code objects of torch's own machinery whose calls are not the model's, and the APIs it calls
// (set_internal_callers): torch 2.x's module backward hooks (BackwardHook._apply_on_tensors) apply
// an autograd Function whose outputs autograd makes views of its inputs, one Tensor.view_as each,
// seen by the mode from that frame (torch 2.14) or from Function.apply one frame below it (torch
// 2.11). They serve the module hooks numprobe itself registers (mix, L0), change nothing in the
// computation, and msprobe records none of them. Code objects hold a reference.
std::vector<PyObject*> g_internal_callers;
std::vector<std::string> g_internal_apis;

bool machinery_api(ApiInfo& api) {
  if (api.from_machinery < 0)
    api.from_machinery = std::find(g_internal_apis.begin(), g_internal_apis.end(), api.type) !=
                         g_internal_apis.end();
  return api.from_machinery > 0;
}

// Whether one of the innermost kDepth Python frames runs a registered code object.
bool called_from_internal_machinery() {
  constexpr int kDepth = 3;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed: the Python frame that made the call
  Py_XINCREF(frame);
  bool hit = false;
  for (int depth = 0; frame && depth < kDepth && !hit; ++depth) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    hit = std::find(g_internal_callers.begin(), g_internal_callers.end(),
                    reinterpret_cast<PyObject*>(code)) != g_internal_callers.end();
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference or null
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return hit;
}

void append_int(std::string& s, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

PyObject* call_through(PyObject* func, PyObject* args, PyObject* kwargs) {
  return PyObject_Call(func, args, kwargs);
}

// Calls fn(key, value) for each str-keyed item of a dict (kwargs, _parameters); other keys are
// skipped. A null dict has no items.
template <typename Fn>
void for_each_str_item(PyObject* kwargs, Fn&& fn) {
  if (!kwargs) return;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kwargs, &pos, &k, &v)) {
    const char* ks = PyUnicode_AsUTF8(k);
    if (!ks) {
      PyErr_Clear();
      continue;
    }
    fn(ks, v);
  }
}

// Depth of captured API calls running on this thread: an API called inside a captured API is
// part of it (msprobe dumps only the outermost call).
thread_local int t_in_api = 0;

struct ApiDepth {
  ApiDepth() { ++t_in_api; }
  ~ApiDepth() { --t_in_api; }
};

// Runs func(*args, **kwargs) as the API `api`, dumping its forward entry and arming its
// backward entry.
PyObject* record_call(ApiInfo& api, PyObject* func, PyObject* args, PyObject* kwargs) {
  TorchCapture* cap = TorchCapture::active();
  if (!cap || !cap->dumping() || InternalGuard::inside() || t_in_api > 0) {
    ApiDepth depth;
    return call_through(func, args, kwargs);
  }
  const std::string& api_type = api.type;
  // "<type>.<n>.forward", built in a reused buffer: a call the filter skips allocates nothing
  // (it also takes no record from the pool).
  thread_local std::string t_name;
  t_name.assign(api_type);
  t_name += '.';
  append_int(t_name, api.next_count(*cap));
  const size_t base_len = t_name.size();
  t_name.append(".forward");
  if (!cap->wants(t_name)) {
    ApiDepth depth;
    return call_through(func, args, kwargs);
  }
  EntryRecord rec = cap->new_record();
  rec.name.assign(t_name);
  const std::string& fwd = rec.name;
  auto parent = cap->current_parent();
  rec.begin_dict();
  if (cap->wants_inputs()) {
    InternalGuard guard;
    const std::string stem = cap->stem(fwd, "input");
    rec.key("input_args");
    add_pyitems(*cap, rec, args, stem, false);
    rec.key("input_kwargs");
    rec.begin_dict();
    for_each_str_item(kwargs, [&](const char* key, PyObject* v) {
      rec.key(key);
      add_pyobject(*cap, rec, v, cap->stem(stem, key), false, 1);
    });
    rec.end();
  }
  PyObject* out;
  {
    ApiDepth depth;
    out = call_through(func, args, kwargs);
  }
  if (!out) return nullptr;
  InternalGuard guard;
  if (cap->wants_outputs()) {
    rec.key("output");
    const std::string stem = cap->stem(fwd, "output");
    if (api_type.rfind("Distributed.", 0) == 0) {
      // Collectives work in place: msprobe's output is the arguments after the call.
      rec.begin_list();
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i)
        add_pyobject(*cap, rec, PyTuple_GET_ITEM(args, i), cap->stem(stem, static_cast<size_t>(i)),
                     true, 1);
      for_each_str_item(kwargs, [&](const char* key, PyObject* v) {
        add_pyobject(*cap, rec, v, cap->stem(stem, key), true, 1);
      });
      rec.end();
    } else {
      add_pyoutput(*cap, rec, out, stem);
    }
  }
  rec.end();
  if (cap->wants_direction(false)) {
    if (const at::Tensor* t = numprobe::python::first_grad_tensor(out))
      cap->attach_backward(
          *t, std::string(fwd, 0, base_len).append(".backward"),
          parent ? std::optional<std::string>(TorchCapture::backward_of(*parent)) : std::nullopt);
  }
  if (cap->wants_direction(true)) cap->submit(std::move(rec), true, parent);
  return out;
}

// __torch_function__(func, types, args, kwargs) of numprobe's TorchFunctionMode. torch pops the
// mode while this runs, so APIs called inside an API are not seen: only the outermost is dumped.
PyObject* torch_function(PyObject*, PyObject* const* a, Py_ssize_t n) {
  if (n < 1) {
    PyErr_SetString(PyExc_TypeError, "__torch_function__ needs func");
    return nullptr;
  }
  PyObject* func = a[0];
  static PyObject* empty = PyTuple_New(0);
  PyObject* args = n > 2 && a[2] != Py_None ? a[2] : empty;
  PyObject* kwargs = n > 3 && a[3] != Py_None && PyDict_GET_SIZE(a[3]) > 0 ? a[3] : nullptr;
  if (!TorchCapture::active()) return call_through(func, args, kwargs);
  auto it = g_api_names.find(func);
  if (it == g_api_names.end() || (machinery_api(it->second) && called_from_internal_machinery()))
    return call_through(func, args, kwargs);
  return record_call(it->second, func, args, kwargs);
}

// __torch_function__ of the direct mode (torch 1.13, debugger.py's _DirectMode), which stands in
// for torch's _TorchFunctionStackMode: a mode above numprobe's on the stack sees the call first, as
// it would without the direct mode, and comes back here when it calls through.
PyObject* direct_torch_function(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  PyObject* out;
  if (numprobe::python::hand_to_stack_top(a, n, &out)) return out;
  return torch_function(self, a, n);
}

PyMethodDef g_torch_function_def = {
    "torch_function",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(&direct_torch_function)),
    METH_FASTCALL, "numprobe's __torch_function__ (the direct mode of torch 1.13)"};

// The same as a method: (self, func, types, args, kwargs). torch 2.x requires a mode's
// __torch_function__ to be bound to the mode (its __self__ is checked), so the mode class holds
// this wrapped in an instancemethod: still no Python frame per call.
PyObject* torch_function_method(PyObject* m, PyObject* const* a, Py_ssize_t n) {
  if (n < 1) {
    PyErr_SetString(PyExc_TypeError, "__torch_function__ needs self");
    return nullptr;
  }
  return torch_function(m, a + 1, n - 1);
}

PyMethodDef g_torch_function_method_def = {
    "__torch_function__",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(&torch_function_method)),
    METH_FASTCALL, "numprobe's __torch_function__ (a method of its TorchFunctionMode)"};

// Hooks of one nn.Module (L0 / mix). Forward calls of the same module nest and their backward
// runs in reverse order, so a per-module stack pairs each backward with its forward call.
class ModuleRecorder {
 public:
  explicit ModuleRecorder(std::string name) : name_(std::move(name)), counter_{name_} {}

  py::object forward_pre(py::handle module, py::handle args) {
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
    backward_names_.push_back({TorchCapture::backward_of(p.fwd), p.parent, p.wanted});
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
      add_pyitems(*cap, rec, grad_output.ptr(), cap->stem(b.name, "input"), false);
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
  };
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

  m.def("set_api_names", [](py::dict names) {
    for (auto& [k, v] : g_api_names) Py_DECREF(k);
    g_api_names.clear();
    for (auto item : names) {
      PyObject* f = item.first.ptr();
      Py_INCREF(f);
      g_api_names.emplace(f, ApiInfo{item.second.cast<std::string>()});
    }
  });
  m.def("allow_inplace_on_views", [](py::handle obj) { allow_inplace_on_views(obj); });
  m.def("cuda_stats_kernel", &numprobe::capture::cuda_stats_kernel_built,
        "True when CUDA tensors are summarised by numprobe's fused kernel (built with nvcc).");
  m.def(
      "call_api",
      [](const std::string& api_type, py::handle func, py::tuple args, py::object kwargs) {
        PyObject* kw = kwargs.is_none() || py::len(kwargs) == 0 ? nullptr : kwargs.ptr();
        ApiInfo api{api_type};
        PyObject* out = record_call(api, func.ptr(), args.ptr(), kw);
        if (!out) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(out);
      },
      "Calls func(*args, **kwargs) as the API api_type (register_custom_api wrappers).");
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
  m.def(
      "set_internal_callers",
      [](py::list codes, std::vector<std::string> apis) {
        for (py::handle c : codes) {
          if (!PyCode_Check(c.ptr()))
            throw py::type_error("set_internal_callers takes code objects");
        }
        for (PyObject* c : g_internal_callers) Py_DECREF(c);
        g_internal_callers.clear();
        for (py::handle c : codes) g_internal_callers.push_back(c.inc_ref().ptr());
        g_internal_apis = codes.empty() ? std::vector<std::string>() : std::move(apis);
        for (auto& entry : g_api_names) entry.second.from_machinery = -1;
      },
      "Code objects of torch's machinery and the APIs it calls: calls of those APIs made from "
      "those frames (or up to two frames below them) are not recorded (torch 2.x's module "
      "backward hooks).");
  m.attr("torch_function") =
      py::reinterpret_steal<py::object>(PyCFunction_NewEx(&g_torch_function_def, nullptr, nullptr));
  m.attr("torch_function_method") = py::reinterpret_steal<py::object>(
      PyInstanceMethod_New(py::reinterpret_steal<py::object>(
                               PyCFunction_NewEx(&g_torch_function_method_def, nullptr, nullptr))
                               .ptr()));

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
      .def("forward_pre", &ModuleRecorder::forward_pre)
      .def("forward", &ModuleRecorder::forward)
      .def("backward", &ModuleRecorder::backward)
      .def("reset", &ModuleRecorder::reset);
  py::class_<ParamGradRecorder>(m, "ParamGradRecorder")
      .def(py::init<std::string, int>())
      .def("on_grad", &ParamGradRecorder::on_grad)
      .def("reset", &ParamGradRecorder::reset);
}
