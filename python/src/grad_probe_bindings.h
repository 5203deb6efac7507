// Registers grad_probe's writer on numprobe._C (task "grad_probe": PrecisionDebugger.monitor).
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::python {
void register_grad_probe(pybind11::module_& m);
}  // namespace numprobe::python
