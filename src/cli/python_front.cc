// numprobe acc-check / multi-acc-check: the replay runs inside Python (torch APIs are Python
// callables), so the CLI hands the command line to `python -m numprobe.acc_check` unchanged,
// msprobe's single-dash flags (-api_info, -csv_path) included. numprobe config-check -d (a static
// pack: Python package metadata) goes to `python -m numprobe.config_check` the same way; its
// compare (-c) is the C++ subcommand (docs/config_check.md, "Design"). numprobe locate drives the
// user's two trainings round by round from `python -m numprobe.locate`, which calls this binary
// back (NUMPROBE_CLI) for compare and acc-check (docs/locate.md).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/subcommand.h"

#ifndef NUMPROBE_PYTHON_EXECUTABLE
#define NUMPROBE_PYTHON_EXECUTABLE "/usr/bin/python3"
#endif
#ifndef NUMPROBE_PYTHON_DIR
#define NUMPROBE_PYTHON_DIR ""
#endif

namespace numprobe::cli {

bool is_python_front(int argc, char** argv) {
  const char* sub = argv[1];
  if (std::strcmp(sub, "config-check") == 0) {  // the compare (-c) is C++: cmd_config_check.cc
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], "-c") == 0 || std::strcmp(argv[i], "--compare") == 0) return false;
    return true;
  }
  return std::strcmp(sub, "acc-check") == 0 || std::strcmp(sub, "multi-acc-check") == 0 ||
         std::strcmp(sub, "locate") == 0;
}

namespace {

bool has_package(const std::string& dir) {
  return !dir.empty() && access((dir + "/numprobe/acc_check/__main__.py").c_str(), R_OK) == 0;
}

// The directory holding the numprobe package acc-check runs, first found of:
//   $NUMPROBE_PYTHONPATH (asked for);
//   beside this executable, as installed: pip puts it at <site-packages>/numprobe/bin/numprobe,
//   `cmake --install` at <prefix>/bin/numprobe with the package in <prefix>/lib/numprobe/python;
//   the build tree's (NUMPROBE_PYTHON_DIR, compiled in: the source tree or the lane's own tree).
// An installed binary so never runs the source tree it was built from. "" when none is found:
// the interpreter's own sys.path then has to hold it.
std::string package_dir() {
  const char* env = std::getenv("NUMPROBE_PYTHONPATH");
  if (env && *env) return env;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    std::string bin_dir(exe);
    bin_dir.erase(bin_dir.find_last_of('/'));  // .../bin
    const std::string up = bin_dir.substr(0, bin_dir.find_last_of('/'));
    if (bin_dir.size() > 13 && bin_dir.compare(bin_dir.size() - 13, 13, "/numprobe/bin") == 0) {
      const std::string site = up.substr(0, up.find_last_of('/'));  // pip: .../site-packages
      if (has_package(site)) return site;
    }
    if (has_package(up + "/lib/numprobe/python")) return up + "/lib/numprobe/python";
  }
  if (has_package(NUMPROBE_PYTHON_DIR)) return NUMPROBE_PYTHON_DIR;
  return "";
}

}  // namespace

int run_python_front(int argc, char** argv) {
  const char* env_python = std::getenv("NUMPROBE_PYTHON");
  const std::string python = env_python && *env_python ? env_python : NUMPROBE_PYTHON_EXECUTABLE;
  const std::string dir = package_dir();
  if (!dir.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = old && *old ? dir + ":" + old : dir;
    setenv("PYTHONPATH", path.c_str(), 1);
  }
  // multi-acc-check forks its workers after `import torch`: torch must find out whether CUDA is
  // there through NVML, without initialising the CUDA driver in the parent (not fork-safe).
  // (Not for config-check: its pack records the PYTORCH_* variables of the user's environment.)
  if (std::strcmp(argv[1], "config-check") != 0)
    setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "1", /*overwrite=*/0);
  const char* module = std::strcmp(argv[1], "config-check") == 0 ? "numprobe.config_check"
                       : std::strcmp(argv[1], "locate") == 0     ? "numprobe.locate"
                                                                 : "numprobe.acc_check";
  if (std::strcmp(argv[1], "locate") == 0) {
    // The rounds call this binary back for compare and acc-check.
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      setenv("NUMPROBE_CLI", exe, /*overwrite=*/0);
    }
  }
  std::vector<std::string> args = {python, "-m", module};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  execv(python.c_str(), cargs.data());
  fprintf(stderr,
          "numprobe %s: error: cannot run %s (%s); set NUMPROBE_PYTHON to a python with torch\n",
          argv[1], python.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace numprobe::cli
