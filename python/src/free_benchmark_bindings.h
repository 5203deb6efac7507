// Registers free_benchmark's engine parts on numprobe._C: its config (parsed and checked by
// capture/capture_config), the list/scope filter capture uses, and the output comparisons
// (capture/free_benchmark_compare.h). The perturbations themselves run in
// numprobe/free_benchmark.py.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::python {
void register_free_benchmark(pybind11::module_& m);
}  // namespace numprobe::python
