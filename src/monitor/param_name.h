// msprobe's monitor names for parameters and modules: the one squash table, used by the libtorch
// TrainerMon (src/torch/monitor) and, through numprobe._C, by the Python TrainerMon.
#pragma once

#include <string>

namespace numprobe::monitor {

// msprobe's squash_param_name: what follows the first recognised container ("layers.",
// "embedding.", "final", "output", "norm"), or the name itself when none matches or !enable.
std::string squash_param_name(const std::string& name, bool enable);

}  // namespace numprobe::monitor
