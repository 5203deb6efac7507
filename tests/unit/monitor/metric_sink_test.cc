#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "monitor/crc32c.h"
#include "monitor/csv_metric_writer.h"
#include "monitor/py_text.h"
#include "monitor/run_dir.h"
#include "monitor/tb_events.h"
#include "numprobe/error.h"
#include "numprobe/monitor/anomaly.h"
#include "numprobe/monitor/sink.h"
#include "test_support.h"

namespace numprobe::monitor {
namespace {

namespace fs = std::filesystem;

MetricRow row(const std::string& name, double norm, double max, int64_t micro = -1) {
  MetricRow r;
  r.name = name;
  r.micro_step = micro;
  r.summary.norm = norm;
  r.summary.max = max;
  return r;
}

std::string only_entry(const std::string& dir, const std::string& prefix) {
  std::string found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) {
      EXPECT_TRUE(found.empty()) << n;
      found = e.path().string();
    }
  }
  return found;
}

TEST(MonitorText, RoundsAndPrintsAsPandas) {
  // Values checked against pandas 3 / numpy 2: DataFrame(...).round(6).to_csv().
  EXPECT_EQ(py_float_str(numpy_round(0.1234567, 6)), "0.123457");
  EXPECT_EQ(py_float_str(numpy_round(3.0, 6)), "3.0");
  EXPECT_EQ(py_float_str(numpy_round(1e-7, 6)), "0.0");
  EXPECT_EQ(py_float_str(numpy_round(2.5e-05, 6)), "2.5e-05");
  EXPECT_EQ(py_float_str(numpy_round(1e17, 6)), "9.999999999999998e+16");
  EXPECT_EQ(py_float_str(numpy_round(0.0000125, 6)), "1.2e-05");  // half to even
  EXPECT_EQ(py_float_str(numpy_round(-2.0000005, 6)), "-2.0");
  EXPECT_EQ(py_float_str(numpy_round(123456789.123456789, 6)), "123456789.123457");
  EXPECT_EQ(py_float_str(numpy_round(NAN, 6)), "nan");
  EXPECT_EQ(py_float_str(numpy_round(-INFINITY, 6)), "-inf");
  EXPECT_EQ(py_float_str(-0.0), "-0.0");
  EXPECT_EQ(py_str_repr("a'b"), "\"a'b\"");
  EXPECT_EQ(py_str_repr("ab"), "'ab'");
}

TEST(MonitorCsv, LinesAsMsprobeWritesThem) {
  EXPECT_EQ(csv_header({"norm", "max"}, false), "vpp_stage,name,step,norm,max\n");
  EXPECT_EQ(csv_header({"norm"}, true), "vpp_stage,name,step,micro_step,norm\n");
  // name.split(':') + values, step inserted at index 2.
  EXPECT_EQ(csv_metric_line("0:fc2.input:1", 7, {1.5, NAN}, 6), "0,fc2.input,7,1,1.5,nan\n");
  EXPECT_EQ(csv_metric_line("1:a,b", 3, {2.0}, 2), "1,\"a,b\",3,2.0\n");
  EXPECT_EQ(record_window(7, 5), (std::pair<int64_t, int64_t>{5, 9}));
  EXPECT_EQ(record_window(0, 1), (std::pair<int64_t, int64_t>{0, 0}));
}

TEST(MetricSink, CsvFilesByteForByte) {
  const std::string base = testing::scratch_dir("monitor_sink_csv");
  MonitorConfig c;
  c.ops = {"norm", "max"};
  c.step_count_per_record = 2;
  MetricSink sink(base, 3, c);
  std::string tag;
  int64_t rank = -1;
  ASSERT_TRUE(parse_run_dir_name(fs::path(sink.run_dir()).filename().string(), &tag, &rank));
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(tag.size(), 14u);
  for (int64_t step = 0; step < 3; ++step) {
    sink.write(MetricGroup::kGradReduced, step,
               {row("0:fc1.weight", 1.0 + step / 3.0, 0.5), row("0:fc2.weight", 2, NAN)});
    sink.write(MetricGroup::kActv, step, {row("0:fc2.input:0", 3, 1e-9, 0)});
    EXPECT_TRUE(sink.end_step(step).empty());
    // Flushed at end_step: the file is complete before close().
    EXPECT_NE(
        testing::read_file(sink.run_dir() + "/grad_reduced_" + (step < 2 ? "0-1" : "2-3") + ".csv")
            .find(",fc2.weight," + std::to_string(step) + ","),
        std::string::npos);
  }
  sink.close();
  EXPECT_EQ(testing::read_file(sink.run_dir() + "/grad_reduced_0-1.csv"),
            "vpp_stage,name,step,norm,max\n"
            "0,fc1.weight,0,1.0,0.5\n"
            "0,fc2.weight,0,2.0,nan\n"
            "0,fc1.weight,1,1.333333,0.5\n"
            "0,fc2.weight,1,2.0,nan\n");
  EXPECT_EQ(testing::read_file(sink.run_dir() + "/grad_reduced_2-3.csv"),
            "vpp_stage,name,step,norm,max\n"
            "0,fc1.weight,2,1.666667,0.5\n"
            "0,fc2.weight,2,2.0,nan\n");
  EXPECT_EQ(testing::read_file(sink.run_dir() + "/actv_0-1.csv"),
            "vpp_stage,name,step,micro_step,norm,max\n"
            "0,fc2.input,0,0,3.0,0.0\n"
            "0,fc2.input,1,0,3.0,0.0\n");
  EXPECT_FALSE(fs::exists(base + "/anomaly_detected"));  // no rules, no anomaly file
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(MetricSink, TensorboardEventsReadBack) {
  const std::string base = testing::scratch_dir("monitor_sink_tb");
  MonitorConfig c;
  c.ops = {"norm", "mean"};
  c.format = OutputFormat::kTensorboard;
  MetricSink sink(base, 1, c);
  MetricRow r = row("0:fc1.weight", 2.5, 0);
  r.summary.mean = -0.125;
  sink.write(MetricGroup::kGradUnreduced, 4, {r});
  sink.end_step(4);
  const std::string file = only_entry(sink.run_dir(), "events.out.tfevents.");
  ASSERT_FALSE(file.empty());
  EXPECT_TRUE(only_entry(sink.run_dir(), "grad_unreduced").empty());  // no CSV in this format
  const EventFile ev = read_event_file(file);                         // flushed at end_step
  EXPECT_EQ(ev.file_version, "brain.Event:2");
  ASSERT_EQ(ev.scalars.size(), 2u);
  EXPECT_EQ(ev.scalars[0].tag, "0:fc1.weight/rank1/acc_grad_norm");
  EXPECT_EQ(ev.scalars[0].step, 4);
  EXPECT_FLOAT_EQ(ev.scalars[0].value, 2.5f);
  EXPECT_EQ(ev.scalars[1].tag, "0:fc1.weight/rank1/acc_grad_mean");
  EXPECT_FLOAT_EQ(ev.scalars[1].value, -0.125f);
  EXPECT_GT(ev.scalars[0].wall_time, 1.5e9);

  // A flipped byte fails the CRC, naming the file.
  std::string bytes = testing::read_file(file);
  bytes[bytes.size() - 10] ^= 1;
  try {
    parse_event_file(bytes, "x.tfevents");
    FAIL() << "corruption not detected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.tfevents"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("CRC"), std::string::npos);
  }
  // A truncated record is refused too.
  EXPECT_THROW(parse_event_file(bytes.substr(0, bytes.size() - 3), "x"), InputError);
}

TEST(MetricSink, AnomaliesWrittenPerRank) {
  const std::string base = testing::scratch_dir("monitor_sink_anomaly");
  MonitorConfig c;
  c.ops = {"norm", "max"};
  c.alert_rules = {{"AnomalyTurbulence", 0.5}, {"AnomalyNan", 1e10}};
  c.alert_dump = true;
  MetricSink sink(base, 2, c);
  sink.set_group(1, {0, 2});
  EXPECT_EQ(testing::read_file(base + "/anomaly_detected/rank2/anomaly.json"), "{}");
  sink.write(MetricGroup::kGradReduced, 0, {row("1:fc1.weight", 1, 1)}, 5);
  EXPECT_TRUE(sink.end_step(0).empty());
  sink.write(MetricGroup::kGradReduced, 1, {row("0:fc0.weight", 1, 1), row("1:fc1.weight", 2, 9)},
             5);
  const auto events = sink.end_step(1);
  // norm doubled: Turbulence; max jumped too, but Turbulence is reported for norm and mean only.
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].op, "norm");
  EXPECT_EQ(events[0].call_id, 6);
  EXPECT_EQ(events[0].tag_name, "1:fc1.weight/rank2/post_grad");
  EXPECT_EQ(events[0].message,
            "Rule AnomalyTurbulence reports anomaly signal in ('1:fc1.weight/rank2/post_grad', "
            "'norm') at step 1, current value 2.0, history mean 1.0.");
  const auto recs =
      parse_anomaly_json(testing::read_file(base + "/anomaly_detected/rank2/anomaly.json"), "a");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].rank, 2);
  EXPECT_EQ(recs[0].pp_stage, 1);
  EXPECT_EQ(recs[0].vpp_stage, 1);
  EXPECT_EQ(recs[0].call_id, 6);
  EXPECT_EQ(recs[0].group_mates, (std::vector<int64_t>{0, 2}));
}

// A row with no tensor behind it (a None gradient) is written as msprobe writes it, all nan, and
// never reported: AnomalyNan would otherwise fire on every model input's missing gradient.
TEST(MetricSink, RowsWithoutTensorAreWrittenButNeverAnomalies) {
  const std::string base = testing::scratch_dir("monitor_sink_no_tensor");
  MonitorConfig c;
  c.ops = {"norm"};
  c.alert_rules = {{"AnomalyNan", 1e10}};
  c.alert_dump = true;
  MetricSink sink(base, 0, c);
  MetricRow absent = row("0:fc1.input:0", std::nan(""), std::nan(""), 0);
  absent.no_tensor = true;
  MetricRow nan_values = row("0:fc1.output:0", std::nan(""), std::nan(""), 0);
  sink.write(MetricGroup::kActvGrad, 0, {absent, nan_values});
  const auto events = sink.end_step(0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].tag_name, "0:fc1.output:0/rank0/actv_grad");
  const std::string dir = sink.run_dir();
  sink.close();
  const std::string csv = testing::read_file(dir + "/actv_grad_0-0.csv");
  EXPECT_NE(csv.find("0,fc1.input,0,0,nan\n"), std::string::npos) << csv;
}

}  // namespace
}  // namespace numprobe::monitor
