// Registers acc-check's functions and classes on numprobe._C.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::python {
void register_acc_check(pybind11::module_& m);
}  // namespace numprobe::python
