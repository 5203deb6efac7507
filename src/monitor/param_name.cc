#include "monitor/param_name.h"

#include <regex>

namespace numprobe::monitor {

std::string squash_param_name(const std::string& name, bool enable) {
  if (!enable) return name;
  // msprobe's table, tried in order; the greedy ".*" keeps the last such container in the name.
  static const std::regex patterns[] = {
      std::regex(R"(^.*\.(layers?\..*))"), std::regex(R"(^.*\.(embeddings?\..*))"),
      std::regex(R"(^.*\.(final.*))"), std::regex(R"(^.*\.(output.*))"),
      std::regex(R"(^.*\.(norm.*))")};
  std::smatch match;
  for (const auto& re : patterns)
    if (std::regex_match(name, match, re)) return match[1].str();
  return name;
}

}  // namespace numprobe::monitor
