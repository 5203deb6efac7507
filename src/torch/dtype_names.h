// Torch's element types by numprobe's names: shared by capture and the acc-check replay, which
// otherwise have nothing of each other.
#pragma once

#include <c10/core/ScalarType.h>

#include "numprobe/dtype.h"

namespace numprobe {

// "torch.float32" etc., as str(tensor.dtype) prints it ("torch.unknown" for the rest).
const char* torch_dtype_name(c10::ScalarType t);

// The element type numprobe's kernels read (DType::kUnknown where they read none).
DType to_dtype(c10::ScalarType t);

}  // namespace numprobe
