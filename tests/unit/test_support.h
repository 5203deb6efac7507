// Helpers shared by the unit tests: fixture paths and scratch directories.
#pragma once

#include <string>

namespace numprobe::testing {

// Absolute path of a file under ../shared/fixtures/msprobe.
std::string msprobe_fixture(const std::string& rel);
// A fresh empty directory under the build tree, unique per test; removed at the next call with
// the same name.
std::string scratch_dir(const std::string& name);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace numprobe::testing
