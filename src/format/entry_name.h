// msprobe's dump entry names (docs/format.md, "Naming"):
//   API     {Prefix}.{api}.{n}.{forward|backward}        Functional.relu.0.forward
//                                                        Aten.add.Tensor.3.backward (api may hold
//                                                        dots)
//   module  {Module|Cell}.{path}.{Class}.{forward|backward}.{n}
//   grads   {Module|Cell}.{path}.{Class}.parameters_grad.{k}
//   debug   {name}.{n}                                    (level debug, save())
#pragma once

#include <cstdint>
#include <string_view>

namespace numprobe {

enum class Direction : uint8_t { kForward, kBackward, kParametersGrad, kDebug, kUnknown };

struct EntryName {
  std::string_view prefix;  // first component: "Functional", "Module", "Tensor", "Aten", ...
  std::string_view op;      // between prefix and counter: "relu", "layer1.0.conv1.Conv2d"
  int64_t index = -1;       // the call counter
  Direction direction = Direction::kUnknown;
  bool is_module = false;  // Module./Cell. naming (counter after the direction)
};

// Never throws; unrecognised names give direction kUnknown with prefix set.
EntryName parse_entry_name(std::string_view name);
std::string_view direction_name(Direction d);

}  // namespace numprobe
