// The training monitor in numprobe._engine (no torch): the metric sink, fed by the MindSpore
// TrainerMon (python/numprobe/mindspore/trainer_mon.py) with numpy arrays.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::pyengine {

void add_monitor_binding(pybind11::module_& m);

}  // namespace numprobe::pyengine
