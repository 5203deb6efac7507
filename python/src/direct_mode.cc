#include "direct_mode.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/python_torch_function_mode.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/PyInterpreter.h>
#endif

namespace numprobe::python {
namespace {

// Strong references, set and cleared under the GIL by debugger.py.
PyObject* g_entry = nullptr;
PyObject* g_stack_dispatch = nullptr;
uint64_t g_shortcut_reads = 0;  // under the GIL

using at::impl::PythonTorchFunctionTLS;

PyObject* stack_object(int64_t index) {
  return PythonTorchFunctionTLS::get_stack_at(index)->ptr(getPyInterpreter());
}

// numprobe's entry is alone on this thread's mode stack: every mode call goes to numprobe. (On
// torch 1.13 the C++ mode object itself changes: torch's Python-side dispatch sets a new
// _DirectMode after each call. Other threads have their own stacks.)
bool only_numprobe_mode() {
  return g_entry && PythonTorchFunctionTLS::stack_len() == 1 && stack_object(0) == g_entry;
}

// Why the shortcut: an active torch function mode sends every property read (an optimizer reads
// p.grad seven times per parameter and step) through handle_torch_function_getter into the mode:
// in torch 1.13 ~520 ns a read instead of ~60 ns, 1,800 reads per step of the per-op benchmark;
// torch 2.x does the same. numprobe's mode records no property, so while it is the only mode that
// detour has no observable effect.
struct Shortcut {
  PyObject_HEAD PyObject* original;  // never null (new_property_shortcut)
};

PyObject* shortcut_get(PyObject* self, PyObject* obj, PyObject* type) {
  PyObject* original = reinterpret_cast<Shortcut*>(self)->original;
  descrgetfunc get = Py_TYPE(original)->tp_descr_get;
  if (obj && obj != Py_None && THPVariable_CheckExact(obj) && only_numprobe_mode()) {
    torch::overrides::StashTorchFunctionModeGuard no_mode;
    ++g_shortcut_reads;
    return get(original, obj, type);
  }
  return get(original, obj, type);
}

int shortcut_set(PyObject* self, PyObject* obj, PyObject* value) {
  PyObject* original = reinterpret_cast<Shortcut*>(self)->original;
  return Py_TYPE(original)->tp_descr_set(original, obj, value);
}

void shortcut_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(reinterpret_cast<Shortcut*>(self)->original);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyTypeObject* shortcut_type() {
  static PyTypeObject* type = nullptr;
  if (type) return type;
  static PyType_Slot slots[] = {{Py_tp_descr_get, reinterpret_cast<void*>(&shortcut_get)},
                                {Py_tp_descr_set, reinterpret_cast<void*>(&shortcut_set)},
                                {Py_tp_dealloc, reinterpret_cast<void*>(&shortcut_dealloc)},
                                {0, nullptr}};
  unsigned int flags = Py_TPFLAGS_DEFAULT;
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
  flags |= Py_TPFLAGS_DISALLOW_INSTANTIATION;  // only new_property_shortcut makes them
#endif
  static PyType_Spec spec = {"numprobe._C.PropertyShortcut", sizeof(Shortcut), 0, flags, slots};
  type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  return type;
}

void replace(PyObject*& slot, PyObject* value) {
  Py_XINCREF(value);
  Py_XDECREF(slot);
  slot = value;
}

}  // namespace

void set_direct_mode(PyObject* entry, PyObject* stack_dispatch) {
  replace(g_entry, entry);
  replace(g_stack_dispatch, stack_dispatch);
}

uint64_t property_shortcut_reads() {
  return g_shortcut_reads;
}

bool hand_to_stack_top(PyObject* const* args, Py_ssize_t n, PyObject** out) {
#if TORCH_VERSION_MAJOR < 2  // torch 2.x dispatches to the top of its stack itself
  const int64_t len = PythonTorchFunctionTLS::stack_len();
  if (g_stack_dispatch && len > 0 && stack_object(len - 1) != g_entry) {
    PyObject* dispatch = g_stack_dispatch;
    Py_INCREF(dispatch);  // a stop() inside the user's mode clears g_stack_dispatch
    *out = PyObject_Vectorcall(dispatch, args, static_cast<size_t>(n), nullptr);
    Py_DECREF(dispatch);
    return true;
  }
#else
  (void)args;
  (void)n;
  (void)out;
#endif
  return false;
}

PyObject* new_property_shortcut(PyObject* original) {
  if (!original || !Py_TYPE(original)->tp_descr_get || !Py_TYPE(original)->tp_descr_set) {
    PyErr_SetString(PyExc_TypeError, "property shortcut needs a data descriptor");
    return nullptr;
  }
  PyTypeObject* type = shortcut_type();
  if (!type) return nullptr;
  auto* s = PyObject_New(Shortcut, type);
  if (!s) return nullptr;
  Py_INCREF(original);
  s->original = original;
  return reinterpret_cast<PyObject*>(s);
}

}  // namespace numprobe::python
