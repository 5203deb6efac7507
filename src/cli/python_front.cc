// numprobe acc-check / multi-acc-check: the replay runs inside Python (torch APIs are Python
// callables), so the CLI hands the command line to `python -m numprobe.acc_check` unchanged,
// msprobe's single-dash flags (-api_info, -csv_path) included.
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

bool is_python_front(const char* sub) {
  return std::strcmp(sub, "acc-check") == 0 || std::strcmp(sub, "multi-acc-check") == 0;
}

int run_python_front(int argc, char** argv) {
  const char* env_python = std::getenv("NUMPROBE_PYTHON");
  const std::string python = env_python && *env_python ? env_python : NUMPROBE_PYTHON_EXECUTABLE;
  // The package next to this build (source tree) unless an installed one is asked for.
  const std::string dir = NUMPROBE_PYTHON_DIR;
  if (!dir.empty() && access((dir + "/numprobe/__init__.py").c_str(), R_OK) == 0) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = old && *old ? dir + ":" + old : dir;
    setenv("PYTHONPATH", path.c_str(), 1);
  }
  // multi-acc-check forks its workers after `import torch`: torch must find out whether CUDA is
  // there through NVML, without initialising the CUDA driver in the parent (not fork-safe).
  setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "1", /*overwrite=*/0);
  std::vector<std::string> args = {python, "-m", "numprobe.acc_check"};
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
