#include "test_support.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace numprobe::testing {

std::string msprobe_fixture(const std::string& rel) {
  return (fs::path(NUMPROBE_SHARED_DIR) / "fixtures" / "msprobe" / rel).lexically_normal().string();
}

std::string scratch_dir(const std::string& name) {
  fs::path dir = fs::path(NUMPROBE_BINARY_DIR) / "test_tmp" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace numprobe::testing
