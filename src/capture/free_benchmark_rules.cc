#include "capture/free_benchmark_rules.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/csv.h"
#include "base/json_text.h"
#include "numprobe/error.h"

namespace numprobe::capture {

double free_benchmark_noise(DType t) {
  switch (t) {
    case DType::kBF16:
      return 1e-4;
    case DType::kF16:
      return 1e-6;
    case DType::kF32:
      return 1e-8;
    case DType::kF64:
      return 1e-16;
    default:
      return 0;
  }
}

double free_benchmark_abs_tol(DType perturbed) {
  const double noise = free_benchmark_noise(perturbed);
  return std::sqrt(noise > 0 ? noise : 1e-8);
}

double free_benchmark_threshold(DType output, bool no_change) {
  if (no_change) return 1.0;
  switch (output) {
    case DType::kF16:
      return 1.002;
    case DType::kBF16:
      return 1.004;
    default:
      return 1.0002;
  }
}

double free_benchmark_cpu_rtol(DType output) {
  switch (output) {
    case DType::kF16:
      return std::ldexp(1.0, -11);
    case DType::kBF16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -14);
  }
}

std::string free_benchmark_csv_header() {
  std::string line;
  for (const char* h : {"rank", "pert_mode", "stage", "step", "api_name", "max_rel", "dtype",
                        "shape", "output_index"})
    csv_append_cell(line, h);
  return line + "\r\n";
}

std::string free_benchmark_csv_line(const FreeBenchmarkRow& r) {
  std::string line, num;
  csv_append_cell(line, std::to_string(r.rank));
  csv_append_cell(line, r.pert_mode);
  csv_append_cell(line, r.stage);
  csv_append_cell(line, std::to_string(r.step));
  csv_append_cell(line, r.api_name);
  if (r.symbol_flipping) {
    num = "symbol_flipping";
  } else if (r.max_rel) {
    base::append_py_float(num, *r.max_rel);
  }
  csv_append_cell(line, num);
  csv_append_cell(line, r.dtype);
  csv_append_cell(line, r.shape);
  csv_append_cell(line, r.output_index ? std::to_string(*r.output_index) : std::string());
  return line + "\r\n";
}

namespace {
void write_all(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path + ": cannot write: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}
}  // namespace

void append_free_benchmark_row(const std::string& dir, const FreeBenchmarkRow& row) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (std::filesystem::path(dir) / kFreeBenchmarkCsvName).string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) throw Error(path + ": cannot open for appending: " + std::strerror(errno));
  try {
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) throw Error(path + ": cannot lock: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw Error(path + ": cannot stat: " + std::strerror(errno));
    // One write per row, the header by whoever finds the file empty: ranks append to one file.
    write_all(fd,
              st.st_size == 0 ? free_benchmark_csv_header() + free_benchmark_csv_line(row)
                              : free_benchmark_csv_line(row),
              path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

}  // namespace numprobe::capture
