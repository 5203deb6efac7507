// numprobe monitor-analyse <dir> [-k 8] [-s "[1,2]"] [-o out]: msprobe's anomaly_processor, the
// earliest anomalies of every rank's anomaly.json; numprobe monitor-report <dir> -o report.html:
// the monitor output as one HTML page (docs/monitor.md).
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "base/file_util.h"
#include "cli/report_assets.h"
#include "cli/subcommand.h"
#include "numprobe/error.h"
#include "numprobe/monitor/anomaly.h"
#include "numprobe/monitor/report.h"

namespace numprobe::cli {
namespace {

class MonitorAnalyseCommand : public Subcommand {
 public:
  const char* name() const override { return "monitor-analyse"; }
  const char* summary() const override {
    return "The earliest anomalies of a monitor run (anomaly_detected/rank*/anomaly.json), "
           "written to anomaly_analyse.json";
  }
  std::vector<Flag> flags() override {
    return {{"dir", "monitor output dir or its anomaly_detected/ dir", Flag::kString, &dir_, true},
            {"-k,--topk", "how many anomalies (default 8)", Flag::kInt, &topk_},
            {"-s,--step", "only these steps, a list such as \"[1,2]\"", Flag::kString, &steps_},
            {"-o,--out_path", "where anomaly_analyse.json goes (default: the data dir)",
             Flag::kString, &out_}};
  }
  int run() override {
    if (topk_ <= 0) throw Error("-k must be greater than 0");
    const std::vector<int64_t> steps = monitor::parse_step_list(steps_);
    const monitor::AnomalyFiles files = monitor::load_anomaly_files(dir_);
    if (files.files.empty()) {
      // A tool that read nothing never says all clear.
      fprintf(stderr, "numprobe monitor-analyse: no anomaly files found under %s\n", dir_.c_str());
      return 1;
    }
    const auto top = monitor::top_anomalies(files.records, static_cast<size_t>(topk_), steps);
    const std::string path = monitor::write_anomaly_analyse(top, out_.empty() ? files.dir : out_);
    printf("read %zu anomaly file(s), %zu anomal%s\n", files.files.size(), files.records.size(),
           files.records.size() == 1 ? "y" : "ies");
    if (top.empty()) {
      printf("no anomaly%s\n", steps.empty() ? "" : " in the given steps");
    } else {
      printf("top %zu earliest:\n", top.size());
      for (size_t i = 0; i < top.size(); ++i)
        printf("%zu: rank %lld step %lld %s: %s\n", i, static_cast<long long>(top[i].rank),
               static_cast<long long>(top[i].step), top[i].tag_name.c_str(),
               top[i].message.c_str());
    }
    printf("result: %s\n", path.c_str());
    return 0;
  }

 private:
  std::string dir_, out_, steps_ = "[]";
  int64_t topk_ = 8;
};

class MonitorReportCommand : public Subcommand {
 public:
  const char* name() const override { return "monitor-report"; }
  const char* summary() const override {
    return "One self-contained HTML page of a monitor output dir: charts per group and op, "
           "ranks, anomalies";
  }
  std::vector<Flag> flags() override {
    return {{"dir", "monitor output dir ($MONITOR_OUTPUT_DIR)", Flag::kString, &dir_, true},
            {"-o,--output", "the HTML file to write", Flag::kString, &out_, true}};
  }
  int run() override {
    const monitor::MonitorData data = monitor::read_monitor_output(dir_);
    base::write_file_atomic(out_, monitor::render_monitor_report(data, report_assets()));
    std::set<int64_t> ranks;
    for (const auto& r : data.runs) ranks.insert(r.rank);
    printf("read %zu run(s), %zu rank(s), %zu series, %zu anomal%s\n", data.runs.size(),
           ranks.size(), data.series.size(), data.anomalies.size(),
           data.anomalies.size() == 1 ? "y" : "ies");
    for (const auto& f : data.truncated_files)
      printf("note: %s ends mid-line (a killed run?): its last line was skipped\n", f.c_str());
    printf("result: %s\n", out_.c_str());
    return 0;
  }

 private:
  std::string dir_, out_;
};

}  // namespace

std::unique_ptr<Subcommand> make_monitor_analyse_command() {
  return std::make_unique<MonitorAnalyseCommand>();
}
std::unique_ptr<Subcommand> make_monitor_report_command() {
  return std::make_unique<MonitorReportCommand>();
}

}  // namespace numprobe::cli
