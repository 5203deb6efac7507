// The keys of a tensor leaf, the one table the reader (dump.cc) and the renderers of read dumps and
// of captured leaves (dump_render.cc) share.
#pragma once

#include <string_view>

#include "numprobe/dump.h"

namespace numprobe::format {

// By TensorField id, in msprobe's order (_analyze_tensor + json_writer's placeholders): type,
// dtype, shape, Max, Min, Mean, Norm, requires_grad, then md5 / data_name.
inline constexpr std::string_view kTensorFieldKeys[kFieldDataName + 1] = {
    "type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "md5", "data_name"};

inline constexpr std::string_view tensor_field_key(TensorField f) {
  return kTensorFieldKeys[f];
}

// numprobe's addition (format v1), after msprobe's members: the non-finite counts, written only
// when one is not zero (a read dump keeps them as extra members).
inline constexpr std::string_view kCountKeys[3] = {"nan_count", "pos_inf_count", "neg_inf_count"};

}  // namespace numprobe::format
