// The built-in MindSpore primitive -> PyTorch API table (mapping_ms_pt_primitives.h).
#include "compare/mapping_ms_pt_primitives.h"

#include <unordered_map>

namespace numprobe {

const PrimitiveMapping* builtin_primitive_mapping(std::string_view ms_api) {
  constexpr std::string_view kPrefix = "Primitive.";
  if (ms_api.substr(0, kPrefix.size()) != kPrefix) return nullptr;
  const size_t dot = ms_api.rfind('.');
  if (dot < kPrefix.size()) return nullptr;  // "Primitive.<Class>" without attribute
  static const std::unordered_map<std::string_view, PrimitiveMapping> kTable = {
      // LayerNorm(x, gamma, beta) -> (y, mean, rstd); F.layer_norm(input, normalized_shape,
      // weight, bias, eps) -> y. mean and rstd (and their gradients) have no PyTorch row.
      {"LayerNorm", {"Functional.layer_norm", {{1, 2}, {2, 3}}}},
      {"Softmax", {"Functional.softmax", {}}},
      {"LogSoftmax", {"Functional.log_softmax", {}}},
      {"GeLU", {"Functional.gelu", {}}},
      {"ReLU", {"Functional.relu", {}}},
      {"SiLU", {"Functional.silu", {}}},
      {"Sigmoid", {"Torch.sigmoid", {}}},
      {"Tanh", {"Torch.tanh", {}}},
  };
  auto it = kTable.find(ms_api.substr(dot + 1));
  return it == kTable.end() ? nullptr : &it->second;
}

}  // namespace numprobe
