// MindSpore primitives held by standard cells (nn.LayerNorm's LayerNorm, nn.Softmax's Softmax) and
// the PyTorch API the same layer calls (torch.nn.LayerNorm -> F.layer_norm). numprobe's MindSpore
// capture dumps them as "Primitive.<attribute>.<Class>.<n>.<direction>" (msprobe's naming); the
// attribute is the cell's and varies, the class does not, so the table is keyed by class.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace numprobe {

struct PrimitiveMapping {
  std::string_view pt_api;  // "Functional.layer_norm"
  // Forward input k of the primitive is forward input `second` of the PyTorch API where the
  // positions differ (LayerNorm's gamma is input 1, F.layer_norm's weight input 2); positions not
  // listed pair by their own index. Outputs and gradients pair by index: a PyTorch backward entry
  // lists the gradients of its tensor inputs in order, as the primitive's does.
  std::vector<std::pair<int, int>> forward_inputs;
};

// The mapping of the API part of a Primitive entry name ("Primitive.layer_norm.LayerNorm"), or null
// when the name is no primitive or its class has none.
const PrimitiveMapping* builtin_primitive_mapping(std::string_view ms_api);

}  // namespace numprobe
