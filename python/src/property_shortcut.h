// Tensor property reads that skip torch 1.13's mode dispatch while numprobe's mode is the only one.
#pragma once

#include <Python.h>

namespace numprobe::python {

// A data descriptor standing in for `original` (a getset_descriptor of torch._C._TensorBase) in
// torch.Tensor's dict while capture runs. Reads on exact tensors while numprobe's direct mode is
// the only torch function mode go straight to the original getter; everything else (writes,
// subclasses, other modes, class access) goes through the original unchanged.
// Returns a new reference, or nullptr with a Python error set.
PyObject* new_property_shortcut(PyObject* original);

}  // namespace numprobe::python
