// Reads msprobe's monitor CSV files (csv_metric_writer.h writes them): header
// "vpp_stage,name,step[,micro_step],<ops>"; newer msprobe's shape, dtype and id columns are
// skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::monitor {

struct MonitorCsv {
  std::vector<std::string> ops;
  bool micro_step = false;
  struct Row {
    std::string tag;  // "<vpp_stage>:<name>[:<micro_step>]", msprobe's row name
    int64_t step = 0;
    std::vector<double> values;  // one per op; NaN for "nan"
  };
  std::vector<Row> rows;
  // The text ended inside a line (a writer killed mid-row): that line was left out.
  bool truncated = false;
};

// A malformed file is an InputError naming source and the line. An unterminated last line (the
// writer flushes whole rows at each step's end, so only a kill mid-write leaves one) is dropped
// and reported through `truncated`, so a killed run's finished steps stay readable.
MonitorCsv parse_monitor_csv(std::string_view text, const std::string& source);

}  // namespace numprobe::monitor
