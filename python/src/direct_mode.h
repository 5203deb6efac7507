// torch 1.13's direct mode (debugger.py's _DirectMode): numprobe's C function installed as the
// C++-level torch function mode, and the hand-off to modes the user enters above it (torch 2.x's
// standard mode path is already direct). On both, tensor property reads that skip numprobe's mode.
#pragma once

#include <Python.h>

#include <cstdint>

namespace numprobe::python {

// Registers the capturing thread's mode: `entry`, the object numprobe pushed on torch's mode stack,
// and on torch 1.13 `stack_dispatch`, torch's _TorchFunctionStackMode.__torch_function__ bound to
// the direct mode object (null on torch 2.x). Both null: unregistered.
void set_direct_mode(PyObject* entry, PyObject* stack_dispatch);

// Calls that reach the direct mode while another mode is on top of this thread's stack (a mode
// the user entered after start(), or any mode on another thread) belong to that mode first: this
// hands them to torch's stack dispatch, sets *out to its result (a new reference, or null with an
// error set) and returns true. Returns false, *out untouched, when numprobe's entry is on top.
bool hand_to_stack_top(PyObject* const* args, Py_ssize_t n, PyObject** out);

// A data descriptor standing in for `original` (a getset_descriptor of torch._C._TensorBase) in
// torch.Tensor's dict while capture runs. Reads on exact tensors (Tensor, Parameter) while
// numprobe's entry is alone on this thread's mode stack run torch's getter with the mode set aside,
// as torch runs code inside a mode; everything else (writes, deletes, subclasses, other modes and
// threads, class access) goes through `original` unchanged.
// Returns a new reference, or nullptr with a Python error set.
PyObject* new_property_shortcut(PyObject* original);
// Reads that took the shortcut since the process started (tests).
uint64_t property_shortcut_reads();

}  // namespace numprobe::python
