// Registers the training monitor's engine on numprobe._C: the config reader and the collector
// numprobe.TrainerMon's hooks feed (torch/monitor/monitor_collector.h).
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::python {
void register_monitor(pybind11::module_& m);
}  // namespace numprobe::python
