#include "property_shortcut.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR < 2
#include <ATen/PythonTorchFunctionTLS.h>
#endif

namespace numprobe::python {
namespace {

// Why: in torch 1.13 any active torch function mode sends every property read (an optimizer
// reads p.grad seven times per parameter and step) through handle_torch_function_getter into the
// mode: ~0.7 us each, more than a recorded API costs numprobe. numprobe's mode records no
// property, so while it is the only mode the detour has no observable effect, and the read can
// run with the mode set aside for its duration, exactly as torch runs it inside the mode.
struct Shortcut {
  PyObject_HEAD PyObject* original;
};

bool only_numprobe_mode() {
#if TORCH_VERSION_MAJOR < 2
  // numprobe's direct mode is both the C++ mode and the single stack entry (debugger.py).
  return at::impl::PythonTorchFunctionTLS::stack_len() == 1 &&
         at::impl::PythonTorchFunctionTLS::get_mode() != nullptr;
#else
  return false;
#endif
}

PyObject* shortcut_get(PyObject* self, PyObject* obj, PyObject* type) {
  PyObject* original = reinterpret_cast<Shortcut*>(self)->original;
  descrgetfunc get = Py_TYPE(original)->tp_descr_get;
#if TORCH_VERSION_MAJOR < 2
  if (obj && obj != Py_None && THPVariable_CheckExact(obj) && only_numprobe_mode()) {
    std::shared_ptr<c10::SafePyObject> mode;
    at::impl::PythonTorchFunctionTLS::swap_mode(mode);
    PyObject* out = get(original, obj, type);
    at::impl::PythonTorchFunctionTLS::swap_mode(mode);
    return out;
  }
#endif
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
  static PyTypeObject* type = [] {
    static PyType_Slot slots[] = {{Py_tp_descr_get, reinterpret_cast<void*>(&shortcut_get)},
                                  {Py_tp_descr_set, reinterpret_cast<void*>(&shortcut_set)},
                                  {Py_tp_dealloc, reinterpret_cast<void*>(&shortcut_dealloc)},
                                  {0, nullptr}};
    static PyType_Spec spec = {"numprobe._C.PropertyShortcut", sizeof(Shortcut), 0,
                               Py_TPFLAGS_DEFAULT, slots};
    return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  }();
  return type;
}

}  // namespace

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
