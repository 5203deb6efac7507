// Reading a grad_probe run (msprobe's layout, docs/formats/grad_probe.md): which ranks and steps a
// dump path holds, a step's grad_summary_{step}.csv, and its direction files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::grad_probe {

// One grad_summary_{step}.csv: the parameters in file order and the header's columns.
struct GradSummary {
  std::vector<std::string> columns;  // the header, "param_name" first
  std::vector<std::string> params;   // column param_name, in file order
};

// Parses a summary's text (a leading UTF-8 BOM is skipped). `file` names it in errors. An empty
// file, a header that is not msprobe's (param_name first; max, min, norm, shape last), a line
// with another cell count, an empty or repeated parameter name, or a name that cannot be a file
// name (contains '/') is an InputError naming the file and the line.
GradSummary parse_grad_summary(std::string_view text, const std::string& file);
GradSummary read_grad_summary(const std::string& path);

// What one rank directory holds: steps with a summary, steps with a direction directory.
struct RankDir {
  std::string path;
  std::map<int64_t, std::string> summaries;  // step -> grad_summary_{step}.csv path
  std::map<int64_t, std::string> step_dirs;  // step -> step{step} directory
};

// The rank{N} directories of a dump path (msprobe's dump_path). A path that is not a directory,
// or holds no rank{N} directory, is an InputError naming it.
std::map<int64_t, RankDir> list_run(const std::string& dump_path);

// The direction files of a step directory: parameter name -> path ("{name}.npy").
std::map<std::string, std::string> list_direction_files(const std::string& step_dir);

}  // namespace numprobe::grad_probe
