// Small helpers shared by the benchmark programs.
#pragma once

#include <fstream>
#include <string>

namespace numprobe::bench {

// Peak resident set size of this process (VmHWM), in KiB; -1 if unavailable.
inline long rss_hwm_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace numprobe::bench
