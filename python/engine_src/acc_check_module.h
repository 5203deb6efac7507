// numprobe._engine's acc-check part: msprobe's per-output metrics and result files over numpy
// arrays, for the MindSpore replay (python/numprobe/acc_check/ms_runner.py), which has no torch.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::pyengine {

void register_acc_check(pybind11::module_& m);

}  // namespace numprobe::pyengine
