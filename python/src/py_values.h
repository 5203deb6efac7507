// Python objects -> entry record values (msprobe's leaf forms), and Python stacks for stack.json.
#pragma once

#include <Python.h>

#include <string>

#include "torch/capture/torch_capture.h"

namespace numprobe::python {

// Appends obj as one value: tensor leaf, {"type": ..., "value": ...} scalar, list or dict.
void add_pyobject(capture::TorchCapture& cap, capture::EntryRecord& rec, PyObject* obj,
                  const std::string& file_stem, bool is_output, int depth = 0);
// Appends the items of a tuple/list as a list, each named "<stem>.<i>".
void add_pyitems(capture::TorchCapture& cap, capture::EntryRecord& rec, PyObject* seq,
                 const std::string& stem, bool is_output);
// A module/API output as msprobe writes it: always a list (a single value becomes [value]).
void add_pyoutput(capture::TorchCapture& cap, capture::EntryRecord& rec, PyObject* out,
                  const std::string& stem);
// First tensor in obj (depth-first) that has a grad_fn, or nullptr.
const at::Tensor* first_grad_tensor(PyObject* obj, int depth = 0);

// The Python stack of the calling thread, innermost first, without numprobe's own frames;
// identical stacks share one object. Needs the GIL (returns nullptr without it).
capture::CaptureSession::Frames current_python_stack();
// torch.distributed: how ProcessGroups are turned into rank lists (set by the Python layer).
void set_group_ranks_fn(PyObject* fn);
bool add_distributed_object(capture::EntryRecord& rec, PyObject* obj);
void set_own_package_dir(std::string dir);

// Calls fn(key, value) for each str-keyed item of a dict (kwargs, a module's _parameters); other
// keys are skipped. A null dict has no items.
template <typename Fn>
void for_each_str_item(PyObject* dict, Fn&& fn) {
  if (!dict) return;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    const char* ks = PyUnicode_AsUTF8(k);
    if (!ks) {
      PyErr_Clear();
      continue;
    }
    fn(ks, v);
  }
}

}  // namespace numprobe::python
