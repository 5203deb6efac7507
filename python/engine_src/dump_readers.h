// Registers the engine's dump readers on numprobe._engine: rank dump discovery (dump_tree.h),
// stack.json and construct.json (stack_construct.h). The Python fronts (numprobe.locate,
// numprobe.acc_check) ask these instead of walking and parsing the files themselves, so every
// front finds the same dumps and reads them with the same errors.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::pyengine {
void register_dump_readers(pybind11::module_& m);
}  // namespace numprobe::pyengine
