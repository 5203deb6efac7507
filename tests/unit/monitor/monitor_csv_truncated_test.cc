#include <gtest/gtest.h>

#include "monitor/monitor_csv.h"
#include "numprobe/error.h"

namespace numprobe::monitor {
namespace {

// A run killed while a row was being written leaves an unterminated last line: the finished rows
// stay readable (monitor-report of a killed run) and the cut is reported, not an error.
TEST(MonitorCsvRead, UnterminatedLastLineIsDroppedAndReported) {
  const std::string text =
      "vpp_stage,name,step,norm\n0,fc1.weight,0,1.5\n0,fc1.weight,1,2.5\n0,fc1.we";
  const MonitorCsv csv = parse_monitor_csv(text, "grad_reduced_0-9.csv");
  EXPECT_TRUE(csv.truncated);
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.rows[1].step, 1);
  EXPECT_DOUBLE_EQ(csv.rows[1].values[0], 2.5);
  const MonitorCsv whole = parse_monitor_csv(text.substr(0, text.rfind('\n') + 1), "x.csv");
  EXPECT_FALSE(whole.truncated);
  // A malformed terminated line is still an error naming the file.
  EXPECT_THROW(parse_monitor_csv("vpp_stage,name,step,norm\n0,fc1,x,1\n", "bad.csv"), Error);
}

}  // namespace
}  // namespace numprobe::monitor
