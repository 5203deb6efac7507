// numprobe._engine.convert_mindspore_dump: numprobe convert's MindSpore reader (src/convert), for
// the MindSpore capture's L2 level, which converts MindSpore's own kernel dump when it closes.
#pragma once

#include <pybind11/pybind11.h>

namespace numprobe::pyengine {

void add_convert_binding(pybind11::module_& m);

}  // namespace numprobe::pyengine
