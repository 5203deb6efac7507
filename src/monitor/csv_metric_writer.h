// msprobe's monitor CSV files (pytorch/monitor/data_writers.py CSVWriterWithAD), byte for byte as
// pandas writes them: <group>_<s0>-<s1>.csv per record window, the header written when the file
// is made, then one line per row: the row name split on ':' with the step inserted as the third
// cell, then the ops' values rounded to ndigits (numpy's round), NaN as "nan".
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace numprobe::monitor {

// "vpp_stage,name,step[,micro_step],<ops>\n"
std::string csv_header(const std::vector<std::string>& ops, bool micro_step);
// One data line (with its '\n').
std::string csv_metric_line(const std::string& name, int64_t step,
                            const std::vector<double>& values, int ndigits);
// The record window [s0, s1] holding step: floor(step / n) * n .. + n - 1.
std::pair<int64_t, int64_t> record_window(int64_t step, int64_t steps_per_record);

// The open file of one group: switches files when a step leaves the current window; appends to a
// file that exists already (msprobe's append_output) without a second header.
class CsvGroupFile {
 public:
  CsvGroupFile(std::string dir, std::string group)
      : dir_(std::move(dir)), group_(std::move(group)) {}
  ~CsvGroupFile();
  CsvGroupFile(const CsvGroupFile&) = delete;
  CsvGroupFile& operator=(const CsvGroupFile&) = delete;

  void append(int64_t step, int64_t steps_per_record, const std::string& header,
              const std::string& lines);
  void flush();  // throws numprobe::Error naming the file on a write error
  void close();

 private:
  std::string dir_, group_, path_;
  FILE* f_ = nullptr;
  int64_t window_start_ = -1;
};

}  // namespace numprobe::monitor
