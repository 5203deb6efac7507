#include "grad_probe/grad_run.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/csv.h"
#include "base/mapped_file.h"
#include "numprobe/error.h"

namespace numprobe::grad_probe {
namespace fs = std::filesystem;
namespace {

// "prefix{N}" with N decimal digits only (msprobe: str.isdigit after the prefix); -1 otherwise.
int64_t indexed(std::string_view name, std::string_view prefix, std::string_view suffix = {}) {
  if (name.size() <= prefix.size() + suffix.size() || name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix)
    return -1;
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 12) return -1;
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

GradSummary parse_grad_summary(std::string_view text, const std::string& file) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  const auto rows = csv_parse(text, file);
  if (rows.empty()) throw InputError(file, "empty grad_summary file: no header line");
  GradSummary s;
  s.columns = rows[0];
  const auto& c = s.columns;
  static const char* const kTail[] = {"max", "min", "norm", "shape"};
  bool ok = c.size() >= 5 && c[0] == "param_name";
  for (size_t i = 0; ok && i < 4; ++i) ok = c[c.size() - 4 + i] == kTail[i];
  if (!ok)
    throw InputError(file,
                     "line 1: not a grad_summary header (param_name first; max, min, norm, shape "
                     "last)");
  std::set<std::string> seen;
  for (size_t r = 1; r < rows.size(); ++r) {
    const std::string line = "line " + std::to_string(r + 1) + ": ";
    if (rows[r].size() == 1 && rows[r][0].empty()) continue;  // a blank line
    if (rows[r].size() != c.size())
      throw InputError(file, line + std::to_string(rows[r].size()) + " cells, the header has " +
                                 std::to_string(c.size()));
    const std::string& name = rows[r][0];
    if (name.empty()) throw InputError(file, line + "empty param_name");
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      throw InputError(file, line + "param_name \"" + name + "\" cannot name a direction file");
    if (!seen.insert(name).second)
      throw InputError(file, line + "param_name \"" + name + "\" appears twice");
    s.params.push_back(name);
  }
  return s;
}

GradSummary read_grad_summary(const std::string& path) {
  const base::MappedFile f(path);
  return parse_grad_summary(std::string_view(f.data(), f.size()), path);
}

std::map<int64_t, RankDir> list_run(const std::string& dump_path) {
  std::error_code ec;
  if (!fs::is_directory(dump_path, ec))
    throw InputError(dump_path, "not a directory (a grad_probe dump_path holds rank{N} folders)");
  std::map<int64_t, RankDir> ranks;
  for (const auto& e : fs::directory_iterator(dump_path)) {
    const int64_t r = indexed(e.path().filename().string(), "rank");
    if (r < 0 || !e.is_directory()) continue;
    RankDir& rd = ranks[r];
    rd.path = e.path().string();
    for (const auto& f : fs::directory_iterator(e.path())) {
      const std::string n = f.path().filename().string();
      if (int64_t s = indexed(n, "grad_summary_", ".csv"); s >= 0 && f.is_regular_file())
        rd.summaries[s] = f.path().string();
      else if (int64_t d = indexed(n, "step"); d >= 0 && f.is_directory())
        rd.step_dirs[d] = f.path().string();
    }
  }
  if (ranks.empty())
    throw InputError(dump_path, "holds no rank{N} directory: not a grad_probe run");
  return ranks;
}

std::map<std::string, std::string> list_direction_files(const std::string& step_dir) {
  std::map<std::string, std::string> out;
  for (const auto& f : fs::directory_iterator(step_dir)) {
    const std::string n = f.path().filename().string();
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0 && f.is_regular_file())
      out[n.substr(0, n.size() - 4)] = f.path().string();
  }
  return out;
}

}  // namespace numprobe::grad_probe
