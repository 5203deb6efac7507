// Registers the module hooks (ModuleRecorder, ParamGradRecorder) on numprobe._C.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::python {
void register_module_recorders(pybind11::module_& m);
}  // namespace numprobe::python
