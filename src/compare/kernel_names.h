// Kernel entries (`Kernel.<OpType>.<n>`, MindSpore's graph-mode kernels converted by `numprobe
// convert`) against API entries (`Primitive.layer_norm.LayerNorm.<n>`, `Functional.softmax.<n>`,
// a PyNative capture of the same model): the fuzzy stage pairs them by one key per op, the
// primitive's class or the API's name, lower case, underscores dropped, a few kernels that
// MindSpore lowers an API to folded onto the API (BatchMatMul -> matmul). docs/compare.md,
// "Pairing".
#pragma once

#include <string>
#include <string_view>

namespace numprobe {

bool is_kernel_prefix(std::string_view prefix);

// prefix and op as parse_entry_name splits them ("Primitive", "layer_norm.LayerNorm").
std::string kernel_pairing_key(std::string_view prefix, std::string_view op);

}  // namespace numprobe
