#include "compare/kernel_names.h"

#include <cctype>
#include <utility>

namespace numprobe {
namespace {

// Kernels MindSpore's graph compiler emits for an API of another name (keys on both sides).
constexpr std::pair<std::string_view, std::string_view> kFolded[] = {
    {"batchmatmul", "matmul"},
    {"realdiv", "div"},
    {"truediv", "div"},
};

}  // namespace

bool is_kernel_prefix(std::string_view prefix) {
  return prefix == "Kernel";
}

std::string kernel_pairing_key(std::string_view prefix, std::string_view op) {
  // A primitive's op is "<attribute>.<Class>": the class names the kernel.
  if (!is_kernel_prefix(prefix)) {
    const size_t dot = op.rfind('.');
    if (dot != std::string_view::npos) op = op.substr(dot + 1);
  }
  std::string key;
  for (char c : op)
    if (c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [from, to] : kFolded)
    if (key == from) return std::string(to);
  return key;
}

}  // namespace numprobe
