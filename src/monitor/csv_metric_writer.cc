#include "monitor/csv_metric_writer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "base/csv.h"
#include "monitor/py_text.h"
#include "numprobe/error.h"

namespace numprobe::monitor {

std::string csv_header(const std::vector<std::string>& ops, bool micro_step) {
  std::string line = micro_step ? "vpp_stage,name,step,micro_step" : "vpp_stage,name,step";
  for (const auto& op : ops) csv_append_cell(line, op);
  return line + "\n";
}

std::string csv_metric_line(const std::string& name, int64_t step,
                            const std::vector<double>& values, int ndigits) {
  // name.split(':') + values, then insert(2, step): Python's insert clamps to the list's end.
  std::vector<std::string> cells;
  size_t start = 0;
  for (;;) {
    const size_t colon = name.find(':', start);
    cells.push_back(name.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  for (double v : values) cells.push_back(py_float_str(numpy_round(v, ndigits)));
  cells.insert(cells.begin() + std::min<size_t>(2, cells.size()), std::to_string(step));
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    // Each cell on its own, so an empty first cell stays empty as pandas writes it.
    std::string cell;
    csv_append_cell(cell, cells[i]);
    if (i > 0) line += ',';
    line += cell;
  }
  return line + "\n";
}

std::pair<int64_t, int64_t> record_window(int64_t step, int64_t n) {
  int64_t count = step / n;
  if (step % n != 0 && step < 0) --count;  // Python's // floors
  return {count * n, (count + 1) * n - 1};
}

CsvGroupFile::~CsvGroupFile() {
  if (f_) fclose(f_);
}

void CsvGroupFile::append(int64_t step, int64_t steps_per_record, const std::string& header,
                          const std::string& lines) {
  const auto [s0, s1] = record_window(step, steps_per_record);
  if (!f_ || s0 != window_start_) {
    close();
    path_ = dir_ + "/" + group_ + "_" + std::to_string(s0) + "-" + std::to_string(s1) + ".csv";
    struct stat st;
    const bool exists = stat(path_.c_str(), &st) == 0;
    f_ = fopen(path_.c_str(), "ab");
    if (!f_) throw InputError(path_, std::string("cannot open for writing: ") + strerror(errno));
    window_start_ = s0;
    if (!exists) fwrite(header.data(), 1, header.size(), f_);
  }
  if (fwrite(lines.data(), 1, lines.size(), f_) != lines.size())
    throw InputError(path_, std::string("write error: ") + strerror(errno));
}

void CsvGroupFile::flush() {
  if (f_ && fflush(f_) != 0)
    throw InputError(path_, std::string("write error: ") + strerror(errno));
}

void CsvGroupFile::close() {
  if (!f_) return;
  const bool bad = fflush(f_) != 0;
  fclose(f_);
  f_ = nullptr;
  if (bad) throw InputError(path_, "write error on close");
}

}  // namespace numprobe::monitor
