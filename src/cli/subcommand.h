// numprobe's subcommands are small classes whose flags are plain data; main.cc turns the flag table
// into CLI11 options, so only main.cc pays for the CLI11 headers.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace numprobe::cli {

struct Flag {
  // kOptionalString: a value that may be left out ("-cm" or "-cm file.yaml"); the target is set
  // to "" or the value when the flag is given, and stays nullopt otherwise.
  enum Kind { kBool, kString, kInt, kStrings, kOptionalString };
  // CLI11 spelling: "-o,--out" or a positional "paths". Single-dash names of several letters
  // ("-dm", msprobe's spelling) are accepted as aliases of the flag's first long name.
  std::string names;
  std::string help;
  Kind kind;
  void* target;  // bool* / std::string* / int64_t* / std::vector<std::string>* /
                 // std::optional<std::string>*
  bool required = false;
};

class Subcommand {
 public:
  virtual ~Subcommand() = default;
  virtual const char* name() const = 0;
  virtual const char* summary() const = 0;
  virtual std::vector<Flag> flags() = 0;
  // Returns the process exit code. Throws numprobe::Error on failure (main prints it, exit 1).
  virtual int run() = 0;
};

std::unique_ptr<Subcommand> make_info_command();
std::unique_ptr<Subcommand> make_stats_command();
std::unique_ptr<Subcommand> make_recover_command();
std::unique_ptr<Subcommand> make_rewrite_command();
std::unique_ptr<Subcommand> make_compare_command();
std::unique_ptr<Subcommand> make_merge_command();
std::unique_ptr<Subcommand> make_graph_command();
std::unique_ptr<Subcommand> make_serve_command();
std::unique_ptr<Subcommand> make_ckpt_compare_command();
std::unique_ptr<Subcommand> make_config_check_command();
std::unique_ptr<Subcommand> make_monitor_analyse_command();
std::unique_ptr<Subcommand> make_monitor_report_command();
std::unique_ptr<Subcommand> make_grad_compare_command();
std::unique_ptr<Subcommand> make_convert_command();

// acc-check, multi-acc-check and config-check without -c (packing: -d, help) run in Python
// (python_front.cc): true for those command lines.
bool is_python_front(int argc, char** argv);
// Replaces the process with `python -m numprobe.acc_check <argv[1:]>` (numprobe.config_check for
// config-check); returns only on failure.
int run_python_front(int argc, char** argv);

}  // namespace numprobe::cli
