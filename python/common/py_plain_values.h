// Python's own values in a capture entry, as msprobe writes them: None as null, bool/int/float/str
// as {"type": "int", "value": 1}, a slice as {"type": "slice", "value": [start, stop, step]}, the
// Ellipsis as "...". One definition for both bindings: numprobe._C (torch) and numprobe._engine
// (torch-free, MindSpore). Header-only: the two extensions share no library.
#pragma once

#include <Python.h>

#include <string_view>

#include "capture/capture_record.h"

namespace numprobe::python_common {

inline void add_slice_part(capture::EntryRecord& rec, PyObject* v) {
  if (v == Py_None)
    rec.null();
  else if (PyLong_Check(v))
    rec.integer(PyLong_AsLongLong(v));
  else
    rec.null();
}

// Appends obj when it is one of those values; false (nothing appended) for anything else
// (containers, tensors, framework objects: the caller's).
inline bool add_plain_value(capture::EntryRecord& rec, PyObject* obj) {
  if (obj == Py_None) {
    rec.null();
  } else if (PyBool_Check(obj)) {
    rec.typed("bool");
    rec.boolean(obj == Py_True);
  } else if (PyLong_Check(obj)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    rec.typed("int");
    if (overflow)
      rec.floating(PyLong_AsDouble(obj));
    else
      rec.integer(v);
  } else if (PyFloat_Check(obj)) {
    rec.typed("float");
    rec.floating(PyFloat_AS_DOUBLE(obj));
  } else if (PyUnicode_Check(obj)) {
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(obj, &len);
    rec.typed("str");
    if (s) {
      rec.string(std::string_view(s, static_cast<size_t>(len)));
    } else {
      PyErr_Clear();
      rec.null();
    }
  } else if (PySlice_Check(obj)) {
    auto* s = reinterpret_cast<PySliceObject*>(obj);
    rec.typed("slice");
    rec.begin_list();
    add_slice_part(rec, s->start);
    add_slice_part(rec, s->stop);
    add_slice_part(rec, s->step);
    rec.end();
  } else if (obj == Py_Ellipsis) {
    rec.string("...");
  } else {
    return false;
  }
  return true;
}

// A dict's items whose keys are str, in order, as f(key, value); other keys are skipped.
template <typename F>
void for_each_str_item(PyObject* dict, F&& f) {
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    const char* ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : nullptr;
    if (!ks) {
      PyErr_Clear();
      continue;
    }
    f(ks, v);
  }
}

}  // namespace numprobe::python_common
