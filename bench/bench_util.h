// Small helpers shared by the benchmark programs.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
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

// Runs work() in a forked child, so that the child's peak RSS is the work's alone, and returns
// the N numbers it reports (ok = false when the child died first).
template <size_t N, typename Work>
bool in_child(Work work, std::array<double, N>& out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  if (fork() == 0) {
    const std::array<double, N> r = work();
    if (write(fds[1], r.data(), sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  const bool ok = read(fds[0], out.data(), sizeof out) == static_cast<ssize_t>(sizeof out);
  close(fds[0]);
  int st = 0;
  wait(&st);
  return ok;
}

}  // namespace numprobe::bench
