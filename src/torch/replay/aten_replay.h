// Replaying one recorded API with libtorch: aten ops called through the dispatcher by schema name,
// and the comparison of a device output with its high-precision reference.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <string>

#include "numprobe/acc_check.h"

namespace numprobe::replay {

// The dispatcher's handle for "aten::<op>.<overload>" ("default" or "" is the unnamed overload).
// Throws numprobe::Error naming the op when libtorch has no such schema.
c10::OperatorHandle find_aten_op(const std::string& op, const std::string& overload);

// Compares a device output with the reference output of the same API (any device, any float or
// integer dtype; complex is reported unusable). op is the bare API name ("gelu", "addmm.default").
AccColumns compare_tensors(const std::string& op, const at::Tensor& bench,
                           const at::Tensor& device);

}  // namespace numprobe::replay
