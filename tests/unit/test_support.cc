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

size_t CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  throw std::runtime_error("no CSV column " + name);
}

CsvTable read_csv(const std::string& path) {
  std::string text = read_file(path);
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> rec;
  std::string cell;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      rec.push_back(cell);
      cell.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      rec.push_back(cell);
      cell.clear();
      records.push_back(rec);
      rec.clear();
      any = false;
    } else {
      cell += c;
      any = true;
    }
  }
  if (any || !cell.empty() || !rec.empty()) {
    rec.push_back(cell);
    records.push_back(rec);
  }
  CsvTable t;
  if (records.empty()) return t;
  t.header = records[0];
  t.rows.assign(records.begin() + 1, records.end());
  return t;
}

}  // namespace numprobe::testing
