// The monitor report: every run directory of a monitor output base (msprobe's layout: CSV files,
// or TensorBoard event files where no CSV is present) and its anomaly files, rendered into one
// self-contained HTML file (uPlot charts, one per group and op). docs/monitor.md, "monitor-report".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "numprobe/monitor/anomaly.h"

namespace numprobe::monitor {

// One line of a chart: the values of one tag of one rank, in the order read.
struct MonitorSeries {
  std::string group;  // "actv", "grad_reduced", ... (the CSV prefix)
  std::string op;     // "norm", ...
  int64_t rank = 0;
  std::string tag;  // the row name: "0:fc1.weight", "0:fc2.input:0"
  std::vector<int64_t> steps;
  std::vector<double> values;
};

struct MonitorRunInfo {
  std::string dir;
  int64_t rank = 0;
  std::string format;  // "csv" or "tensorboard"
  size_t files = 0;
};

struct MonitorData {
  std::vector<MonitorRunInfo> runs;
  std::vector<MonitorSeries> series;
  std::vector<AnomalyRecord> anomalies;
  std::vector<std::string> anomaly_files;
  // CSV files whose last line was cut short (a killed run): that line was skipped.
  std::vector<std::string> truncated_files;
};

// Reads every run directory (<time>-rank<r>-<uid>) under base. A malformed CSV or event file is an
// InputError naming the file (and the line of a CSV); no readable run at all is an Error.
MonitorData read_monitor_output(const std::string& base);

// The scripts and styles the report embeds (the CLI links them in from web/, see
// cmake/web_assets.cmake).
struct ReportAssets {
  std::string_view uplot_js;
  std::string_view uplot_css;
  std::string_view report_js;
  std::string_view report_css;
};

// The HTML page. Data from the files travels as JSON in a <script type="application/json"> with
// '<', '>' and '&' escaped, and the page script shows it through textContent only.
std::string render_monitor_report(const MonitorData& data, const ReportAssets& assets);

}  // namespace numprobe::monitor
