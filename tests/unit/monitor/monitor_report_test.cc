#include <gtest/gtest.h>

#include <cmath>

#include "base/file_util.h"
#include "monitor/monitor_csv.h"
#include "numprobe/error.h"
#include "numprobe/monitor/report.h"
#include "numprobe/monitor/sink.h"
#include "test_support.h"

namespace numprobe::monitor {
namespace {

const char kHostile[] = "0:</script><img src=x onerror=alert(1)>&amp;.weight";

TEST(MonitorCsvReader, ReadsWhatTheSinkWrites) {
  const MonitorCsv c = parse_monitor_csv(
      "vpp_stage,name,step,micro_step,norm,shape,max\n0,fc2.input,3,1,1.5,\"[2, 3]\",nan\n",
      "a.csv");
  EXPECT_TRUE(c.micro_step);
  EXPECT_EQ(c.ops, (std::vector<std::string>{"norm", "max"}));  // msprobe's shape skipped
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].tag, "0:fc2.input:1");
  EXPECT_EQ(c.rows[0].step, 3);
  EXPECT_DOUBLE_EQ(c.rows[0].values[0], 1.5);
  EXPECT_TRUE(std::isnan(c.rows[0].values[1]));
}

TEST(MonitorCsvReader, ErrorsNameFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "a.csv: empty"},
      {"name,step\n", "a.csv: line 1: header"},
      {"vpp_stage,name,step,norm\n0,a,1,2\n0,a,x,2\n", "a.csv: line 3: step 'x'"},
      {"vpp_stage,name,step,norm\n0,a,1\n", "a.csv: line 2: 3 cells"},
      {"vpp_stage,name,step,norm\n0,a,1,abc\n", "a.csv: line 2: norm 'abc'"},
      {"vpp_stage,name,step,micro_step,norm\n0,a,1,q,2\n", "line 2: micro_step 'q'"},
      {"vpp_stage,name,step,norm\n0,\"a,1,2\n", "a.csv"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      parse_monitor_csv(text, "a.csv");
      ADD_FAILURE() << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

std::string sample_output(const std::string& name, OutputFormat format) {
  const std::string base = testing::scratch_dir(name);
  MonitorConfig c;
  c.ops = {"norm"};
  c.format = format;
  c.alert_rules = {{"AnomalyTurbulence", 0.5}};
  c.alert_dump = true;
  for (int64_t rank = 0; rank < 2; ++rank) {
    MetricSink sink(base, rank, c);
    for (int64_t step = 0; step < 4; ++step) {
      MetricRow a, b;
      a.name = "0:fc1.weight";
      a.summary.norm = step == 3 ? 50 : 1 + rank;
      b.name = kHostile;
      b.summary.norm = 2;
      sink.write(MetricGroup::kGradReduced, step, {a, b});
      sink.end_step(step);
    }
  }
  return base;
}

TEST(MonitorReport, ReadsRunsAndEscapesData) {
  const std::string base = sample_output("monitor_report", OutputFormat::kCsv);
  const MonitorData data = read_monitor_output(base);
  EXPECT_EQ(data.runs.size(), 2u);
  EXPECT_EQ(data.series.size(), 4u);  // 2 ranks x 2 tags x 1 op
  EXPECT_EQ(data.anomalies.size(), 2u);
  EXPECT_EQ(data.series[0].steps, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(data.series[0].values[3], 50);

  const ReportAssets assets{"/*uplot</script>*/", ".u{}", "/*report*/", ".r{}"};
  const std::string html = render_monitor_report(data, assets);
  EXPECT_NE(html.find("fc1.weight"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\\u0026amp;"),
            std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);  // the hostile tag never appears as markup
  EXPECT_EQ(html.find("&amp;"), std::string::npos);
  EXPECT_NE(html.find("/*uplot<\\/script>*/"), std::string::npos);  // asset cannot end its element
  size_t scripts = 0;
  for (size_t at = 0; (at = html.find("</script>", at)) != std::string::npos; ++at) ++scripts;
  EXPECT_EQ(scripts, 3u);  // data, uPlot, report script
}

TEST(MonitorReport, TensorboardRunsAreRead) {
  const std::string base = sample_output("monitor_report_tb", OutputFormat::kTensorboard);
  const MonitorData data = read_monitor_output(base);
  ASSERT_EQ(data.runs.size(), 2u);
  EXPECT_EQ(data.runs[0].format, "tensorboard");
  ASSERT_EQ(data.series.size(), 4u);
  EXPECT_EQ(data.series[0].group, "grad_reduced");
  EXPECT_EQ(data.series[0].op, "norm");
  EXPECT_EQ(data.series[0].tag, "0:fc1.weight");
}

TEST(MonitorReport, NothingReadableIsAnError) {
  const std::string base = testing::scratch_dir("monitor_report_empty");
  base::make_dirs(base + "/Jan01_00-00-00-rank0-abcdef12");
  testing::write_file(base + "/Jan01_00-00-00-rank0-abcdef12/notes.txt", "x");
  EXPECT_THROW(read_monitor_output(base), Error);
  testing::write_file(base + "/Jan01_00-00-00-rank0-abcdef12/actv_0-0.csv", "vpp_stage,name\n");
  try {
    read_monitor_output(base);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("actv_0-0.csv: line 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace numprobe::monitor
