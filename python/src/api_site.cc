// API sites (api_hook.h): C callables debugger.py installs over msprobe-listed attributes of
// torch.Tensor (its operators), torch.nn.functional and torch (their Python functions) while
// capture is armed (from the first start() to close()). A site records the call through
// record_call with the caller's own arguments and name; the torch dispatch it makes inside is then
// part of the recorded call, so nothing is recorded twice. Outside a dumping step (or inside
// another recorded API) it only calls through.
//
// On a class a site binds like a function (a.__add__ is a bound method), and Python's operator
// slots find it: `a + b` calls Tensor.__add__'s site with (a, b).
#include "api_hook.h"  // Python.h first: structmember.h needs it

#include <structmember.h>

#include <string>

namespace numprobe::python {
namespace {

struct ApiSiteObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* original;  // the attribute the site stands in for (owned)
  ApiInfo* info;       // owned; a pointer keeps this a C struct of fixed layout
};

PyObject* site_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* names) {
  auto* site = reinterpret_cast<ApiSiteObject*>(self);
  // Between captures a site only calls through, without building a tuple.
  if (!capture_dumping()) return PyObject_Vectorcall(site->original, args, nargsf, names);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  // record_call takes a tuple and a dict (the form the mode receives); a site's callers are
  // Python code, whose arguments are few.
  PyObject* tuple = PyTuple_New(n);
  if (!tuple) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(tuple, i, args[i]);
  }
  PyObject* kwargs = nullptr;
  if (names && PyTuple_GET_SIZE(names) > 0) {
    kwargs = PyDict_New();
    if (!kwargs) {
      Py_DECREF(tuple);
      return nullptr;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
      if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(names, i), args[n + i]) < 0) {
        Py_DECREF(tuple);
        Py_DECREF(kwargs);
        return nullptr;
      }
    }
  }
  PyObject* out = record_call(*site->info, site->original, tuple, kwargs, CallPath::kSite);
  Py_DECREF(tuple);
  Py_XDECREF(kwargs);
  return out;
}

// Binding on instance access, as a Python function binds (Py_TPFLAGS_METHOD_DESCRIPTOR lets
// method calls skip the bound object).
PyObject* site_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

// Attributes a caller may look up on the function it replaced (__name__, __doc__, __module__,
// __qualname__, signature data) come from the original.
PyObject* site_getattro(PyObject* self, PyObject* name) {
  PyObject* v = PyObject_GenericGetAttr(self, name);
  if (v || !PyErr_ExceptionMatches(PyExc_AttributeError)) return v;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<ApiSiteObject*>(self)->original, name);
}

PyObject* site_repr(PyObject* self) {
  auto* site = reinterpret_cast<ApiSiteObject*>(self);
  return PyUnicode_FromFormat("<numprobe API site %s of %R>", site->info->type.c_str(),
                              site->original);
}

void site_dealloc(PyObject* self) {
  auto* site = reinterpret_cast<ApiSiteObject*>(self);
  Py_XDECREF(site->original);
  delete site->info;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyMemberDef g_site_members[] = {
    {const_cast<char*>("__wrapped__"), T_OBJECT, offsetof(ApiSiteObject, original), READONLY,
     const_cast<char*>("the callable this site records")},
    {}};

PyTypeObject* make_site_type() {
  static PyTypeObject* type = [] {
    static PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(&site_dealloc)},
                                  {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
                                  {Py_tp_descr_get, reinterpret_cast<void*>(&site_descr_get)},
                                  {Py_tp_getattro, reinterpret_cast<void*>(&site_getattro)},
                                  {Py_tp_repr, reinterpret_cast<void*>(&site_repr)},
                                  {Py_tp_members, g_site_members},
                                  {0, nullptr}};
    static PyType_Spec spec = {
        "numprobe._C.ApiSite", sizeof(ApiSiteObject), 0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL, slots};
    auto* t = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
    if (t) t->tp_vectorcall_offset = offsetof(ApiSiteObject, vectorcall);
    return t;
  }();
  return type;
}

}  // namespace

PyTypeObject* api_site_type() {
  return make_site_type();
}

PyObject* api_site_original(PyObject* obj) {
  PyTypeObject* t = api_site_type();
  if (!t) {
    PyErr_Clear();
    return nullptr;
  }
  return Py_TYPE(obj) == t ? reinterpret_cast<ApiSiteObject*>(obj)->original : nullptr;
}

PyObject* new_api_site(const std::string& type, PyObject* original) {
  PyTypeObject* t = api_site_type();
  if (!t) return nullptr;
  if (!PyCallable_Check(original)) {
    PyErr_SetString(PyExc_TypeError, "api_site: original is not callable");
    return nullptr;
  }
  auto* site = reinterpret_cast<ApiSiteObject*>(t->tp_alloc(t, 0));
  if (!site) return nullptr;
  site->vectorcall = &site_vectorcall;
  Py_INCREF(original);
  site->original = original;
  site->info = new ApiInfo(type);
  return reinterpret_cast<PyObject*>(site);
}

}  // namespace numprobe::python
