// The API hook: numprobe's __torch_function__, the table of APIs and record_call (api_hook.h).
#include "api_hook.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "direct_mode.h"
#include "py_values.h"
#include "torch/capture/torch_capture.h"

namespace py = pybind11;
using numprobe::capture::EntryRecord;
using numprobe::capture::InternalGuard;
using numprobe::capture::TorchCapture;

namespace numprobe::python {

int64_t ApiInfo::next_count(TorchCapture& cap) {
  auto& s = cap.session();
  if (session != s.id()) {
    slot = s.counter_slot(type);
    session = s.id();
  }
  return capture::CaptureSession::next_count(slot);
}

namespace {

// func object -> its API. Keys hold a reference (see set_api_names); entries added by the
// resolver too.
std::unordered_map<PyObject*, ApiInfo> g_api_names;

// Python callable (func) -> API name or None, asked once per func object the table does not know:
// a torch function reached under another name than the table was built from (F.gelu rebound by a
// library before capture started, a function stored before the table was built). Funcs it answers
// None for are remembered (with a reference, so their addresses cannot be reused) up to
// kMaxUnknown; past that they are asked again each time.
PyObject* g_resolver = nullptr;
std::unordered_set<PyObject*> g_not_apis;
constexpr size_t kMaxUnknown = 4096;

// Torch functions that are not APIs but run APIs the user would expect to see (Tensor.backward:
// the seed gradient `ones_like` of loss.backward(), which msprobe records). torch pops the mode
// while a function it dispatched runs, which would hide those calls; a transparent function runs
// its registered body instead, which re-enters the mode. func -> body, references held.
std::unordered_map<PyObject*, PyObject*> g_transparent;

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

// Whether `value` passed as keyword `key` is that keyword's default in `api` (see
// ApiInfo::defaults): same simple type and equal value.
bool is_default(const ApiInfo& api, const char* key, PyObject* value) {
  for (const auto& [name, def] : api.defaults) {
    if (name != key) continue;
    if (def == value) return true;
    if (Py_TYPE(def) != Py_TYPE(value)) return false;
    if (!PyLong_CheckExact(def) && !PyFloat_CheckExact(def) && !PyUnicode_CheckExact(def))
      return false;
    int eq = PyObject_RichCompareBool(def, value, Py_EQ);
    if (eq < 0) PyErr_Clear();
    return eq == 1;
  }
  return false;
}

// Depth of captured API calls running on this thread: an API called inside a captured API is
// part of it (msprobe dumps only the outermost call).
thread_local int t_in_api = 0;

struct ApiDepth {
  ApiDepth() { ++t_in_api; }
  ~ApiDepth() { --t_in_api; }
};

// The first tensor argument, when `out` is that very object: an in-place API (add_, relu_,
// __iadd__) returns the tensor it modified.
bool returns_its_first_tensor(PyObject* args, PyObject* out) {
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    if (THPVariable_Check(a)) return a == out;
  }
  return false;
}

// msprobe's rule: a dropout API called with p == 0 (its second positional argument, else keyword
// p, default 0.5) gets no backward entry.
bool dropout_without_backward(ApiInfo& api, PyObject* args, PyObject* kwargs) {
  if (api.dropout < 0) {
    static const char* const kDropouts[] = {"Functional.dropout",
                                            "Functional.dropout1d",
                                            "Functional.dropout2d",
                                            "Functional.dropout3d",
                                            "Functional.alpha_dropout",
                                            "Functional.feature_alpha_dropout",
                                            "Torch.dropout",
                                            "Torch.dropout_",
                                            "Torch.alpha_dropout",
                                            "Torch.alpha_dropout_",
                                            "Torch.feature_alpha_dropout",
                                            "Torch.feature_alpha_dropout_",
                                            "Torch.feature_dropout",
                                            "Torch.feature_dropout_"};
    api.dropout =
        std::find(std::begin(kDropouts), std::end(kDropouts), api.type) != std::end(kDropouts);
  }
  if (!api.dropout) return false;
  PyObject* p = PyTuple_GET_SIZE(args) >= 2 ? PyTuple_GET_ITEM(args, 1)
                : kwargs                    ? PyDict_GetItemString(kwargs, "p")
                                            : nullptr;
  if (!p || !(PyFloat_Check(p) || PyLong_Check(p))) return false;
  const double v = PyFloat_AsDouble(p);
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return v == 0.0;
}

}  // namespace

bool capture_dumping() {
  TorchCapture* cap = TorchCapture::active();
  return cap && cap->dumping();
}

PyObject* record_call(ApiInfo& api, PyObject* func, PyObject* args, PyObject* kwargs,
                      CallPath path) {
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
  const bool drop_defaults = path == CallPath::kMode && !api.defaults.empty();
  rec.begin_dict();
  if (cap->wants_inputs()) {
    InternalGuard guard;
    const std::string stem = cap->stem(fwd, "input");
    rec.key("input_args");
    add_pyitems(*cap, rec, args, stem, false);
    rec.key("input_kwargs");
    rec.begin_dict();
    for_each_str_item(kwargs, [&](const char* key, PyObject* v) {
      if (drop_defaults && is_default(api, key, v)) return;
      rec.key(key);
      add_pyobject(*cap, rec, v, cap->stem(stem, key), false, 1);
    });
    rec.end();
  }
  // msprobe writes the recomputation flag of every forward API entry after its inputs.
  rec.key("is_recompute");
  rec.boolean(false);
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
  if (cap->wants_direction(false) && !dropout_without_backward(api, args, kwargs)) {
    if (const at::Tensor* t = first_grad_tensor(out))
      cap->attach_backward(
          *t, std::string(fwd, 0, base_len).append(".backward"),
          parent ? std::optional<std::string>(TorchCapture::backward_of(*parent)) : std::nullopt,
          returns_its_first_tensor(args, out));
  }
  if (cap->wants_direction(true)) cap->submit(std::move(rec), true, parent);
  return out;
}

namespace {

// The API `func` is, asking the resolver when the table does not know it; null when it is none.
ApiInfo* find_api(PyObject* func) {
  auto it = g_api_names.find(func);
  if (it != g_api_names.end()) return &it->second;
  if (!g_resolver || g_not_apis.count(func)) return nullptr;
  PyObject* name = PyObject_CallOneArg(g_resolver, func);
  if (!name) {
    PyErr_Clear();  // a resolver error must not break the user's call
    return nullptr;
  }
  ApiInfo* found = nullptr;
  if (PyUnicode_Check(name)) {
    if (const char* s = PyUnicode_AsUTF8(name)) {
      Py_INCREF(func);
      found = &g_api_names.emplace(func, ApiInfo{s}).first->second;
    } else {
      PyErr_Clear();
    }
  } else if (g_not_apis.size() < kMaxUnknown) {
    Py_INCREF(func);
    g_not_apis.insert(func);
  }
  Py_DECREF(name);
  return found;
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
  // A Python function dispatches itself by its module-level name, which is numprobe's site while
  // capture runs: the function is the one the site stands in for.
  if (PyObject* original = api_site_original(func)) func = original;
  ApiInfo* api = find_api(func);
  if (!api) {
    auto body = g_transparent.find(func);
    if (body != g_transparent.end() && t_in_api == 0 && !InternalGuard::inside())
      return call_through(body->second, args, kwargs);
    return call_through(func, args, kwargs);
  }
  if (machinery_api(*api) && called_from_internal_machinery())
    return call_through(func, args, kwargs);
  return record_call(*api, func, args, kwargs, CallPath::kMode);
}

// __torch_function__ of the direct mode (torch 1.13, debugger.py's _DirectMode), which stands in
// for torch's _TorchFunctionStackMode: a mode above numprobe's on the stack sees the call first, as
// it would without the direct mode, and comes back here when it calls through.
PyObject* direct_torch_function(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  PyObject* out;
  if (hand_to_stack_top(a, n, &out)) return out;
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

void clear_api_names() {
  for (auto& [func, info] : g_api_names) {
    for (auto& d : info.defaults) Py_DECREF(d.second);
    Py_DECREF(func);
  }
  g_api_names.clear();
  for (PyObject* f : g_not_apis) Py_DECREF(f);
  g_not_apis.clear();
}

}  // namespace

void register_api_hook(py::module_& m) {
  m.def(
      "set_api_names",
      [](py::dict names) {
        clear_api_names();
        for (auto item : names) {
          PyObject* f = item.first.ptr();
          Py_INCREF(f);
          g_api_names.emplace(f, ApiInfo{item.second.cast<std::string>()});
        }
      },
      "Sets the table {torch callable: API name}.");
  m.def(
      "set_api_defaults",
      [](py::dict defaults) {
        for (auto item : defaults) {
          auto it = g_api_names.find(item.first.ptr());
          if (it == g_api_names.end()) continue;
          for (auto& d : it->second.defaults) Py_DECREF(d.second);
          it->second.defaults.clear();
          for (auto kv : item.second.cast<py::dict>())
            it->second.defaults.emplace_back(kv.first.cast<std::string>(),
                                             kv.second.inc_ref().ptr());
        }
      },
      "{torch callable: {keyword: default}}: keywords the mode drops when they hold their "
      "default (torch's Python functions pass them on although the caller did not).");
  m.def(
      "set_api_resolver",
      [](py::object fn) {
        Py_XDECREF(g_resolver);
        g_resolver = fn.is_none() ? nullptr : fn.inc_ref().ptr();
      },
      "fn(func) -> API name or None, asked once for a callable the table does not know.");
  m.def(
      "set_transparent",
      [](py::dict bodies) {
        for (auto& [f, b] : g_transparent) {
          Py_DECREF(f);
          Py_DECREF(b);
        }
        g_transparent.clear();
        for (auto item : bodies)
          g_transparent.emplace(item.first.inc_ref().ptr(), item.second.inc_ref().ptr());
      },
      "{torch function: body}: dispatched calls of these run body(*args, **kwargs) instead, "
      "which re-enters numprobe's mode so that the APIs inside are recorded.");
  m.def(
      "call_api",
      [](const std::string& api_type, py::handle func, py::tuple args, py::object kwargs) {
        PyObject* kw = kwargs.is_none() || py::len(kwargs) == 0 ? nullptr : kwargs.ptr();
        ApiInfo api{api_type};
        PyObject* out = record_call(api, func.ptr(), args.ptr(), kw, CallPath::kSite);
        if (!out) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(out);
      },
      "Calls func(*args, **kwargs) as the API api_type (register_custom_api wrappers).");
  m.def(
      "api_site",
      [](const std::string& api_type, py::handle original) {
        PyObject* s = new_api_site(api_type, original.ptr());
        if (!s) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(s);
      },
      "A callable recording calls of `original` as api_type with the caller's arguments; bound "
      "as a method when installed on a class.");
  if (PyTypeObject* t = api_site_type())
    m.attr("ApiSiteType") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(t));
  else
    throw py::error_already_set();
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
}

}  // namespace numprobe::python
