// Test helper (never installed): writes a small monitor output through the real MetricSink, for the
// Python and browser tests that read it back with TensorBoard, msprobe and a browser.
//   monitor_write_sample <base> <csv|tensorboard> <rank> [hostile]
// Steps 0..9; fc1.weight's norm jumps at step 6 (AnomalyTurbulence), fc2.input's max is NaN at
// step 8 (AnomalyNan); "hostile" adds a row whose name is markup.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "numprobe/error.h"
#include "numprobe/monitor/config.h"
#include "numprobe/monitor/sink.h"

using namespace numprobe::monitor;

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s <base> <csv|tensorboard> <rank> [hostile]\n", argv[0]);
    return 2;
  }
  try {
    const std::string format = argv[2];
    const int64_t rank = std::atoll(argv[3]);
    const MonitorConfig config =
        parse_monitor_config(R"({"ops": ["norm", "max", "mean"], "format": ")" + format +
                                 R"(", "step_count_per_record": 5, "alert": {"rules": [
            {"rule_name": "AnomalyTurbulence", "args": {"threshold": 0.5}},
            {"rule_name": "AnomalyNan", "args": {"threshold": 1e10}}], "dump": true}})",
                             "sample.json");
    MetricSink sink(argv[1], rank, config);
    for (int64_t step = 0; step < 10; ++step) {
      const double r = 1.0 + 0.1 * static_cast<double>(rank);
      std::vector<MetricRow> grads(2);
      grads[0].name = "0:fc1.weight";
      grads[0].summary.norm = (step == 6 ? 9.0 : 1.0 + 0.01 * step) * r;
      grads[0].summary.max = 0.5 * r;
      grads[0].summary.mean = 0.01 * r;
      grads[1].name = "0:fc2.weight";
      grads[1].summary.norm = 2.0 * r;
      grads[1].summary.max = 0.25;
      grads[1].summary.mean = -0.02;
      if (argc > 4) {
        grads.push_back(grads[1]);
        grads.back().name = "0:</script><img src=x onerror=alert(1)>.weight";
      }
      sink.write(MetricGroup::kGradReduced, step, grads, 0);
      std::vector<MetricRow> actv(1);
      actv[0].name = "0:fc2.input:0";
      actv[0].micro_step = 0;
      actv[0].summary.norm = 3.0 * r;
      actv[0].summary.max = step == 8 ? NAN : 0.75;
      actv[0].summary.mean = 0.125;
      sink.write(MetricGroup::kActv, step, actv, 10);
      sink.end_step(step);
    }
    sink.close();
    printf("%s\n", sink.run_dir().c_str());
  } catch (const numprobe::Error& e) {
    fprintf(stderr, "monitor_write_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
