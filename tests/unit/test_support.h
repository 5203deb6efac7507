// Helpers shared by the unit tests: fixture paths and scratch directories.
#pragma once

#include <string>
#include <vector>

namespace numprobe::testing {

// Absolute path of a file under ../shared/fixtures/msprobe.
std::string msprobe_fixture(const std::string& rel);
// A fresh empty directory under the build tree, unique per test; removed at the next call with
// the same name.
std::string scratch_dir(const std::string& name);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

// A CSV table (RFC 4180 quoting, multi-line cells) keyed by header name.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t column(const std::string& name) const;  // throws if absent
};
CsvTable read_csv(const std::string& path);

}  // namespace numprobe::testing
