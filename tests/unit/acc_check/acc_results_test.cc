#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/csv.h"
#include "numprobe/acc_check.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::vector<std::string>> rows_of(const std::string& p) {
  return csv_parse(slurp(p), p);
}

class AccResults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("np_acc_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

AccColumns passing() {
  AccColumns c;
  c.bench_dtype = "torch.float64";
  c.device_dtype = "torch.float32";
  c.shape = "(2, 3)";
  c.cosine = 1.0;
  c.max_abs_err = 0.0;
  c.status = AccStatus::kPass;
  c.message = "Max abs error is less than 0.001, consider as pass.\n";
  return c;
}

TEST_F(AccResults, WritesMsprobeColumnsAndRowsPerOutput) {
  AccResultFiles f = AccResultFiles::create(dir_.string());
  f.write("Functional.gelu.0", AccStatus::kPass, AccStatus::kPass, {passing()}, {passing()});
  f.write("Torch.chunk.4", AccStatus::kPass, AccStatus::kNone, {passing(), passing()}, {});
  f.write("Distributed.all_reduce.0", AccStatus::kSkip, AccStatus::kNone,
          {acc_unusable_output(AccStatus::kSkip, "communication API, not replayed")}, {},
          "communication API, not replayed");
  const auto r = rows_of(f.result_path());
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], acc_result_header());
  EXPECT_EQ(r[1], (std::vector<std::string>{"Functional.gelu.0", "pass", "pass", ""}));
  EXPECT_EQ(r[2][2], " ");
  EXPECT_EQ(r[3][1], "SKIP");
  EXPECT_EQ(r[3][3], "communication API, not replayed");
  const auto d = rows_of(f.details_path());
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d[0], acc_details_header());
  EXPECT_EQ(d[1][0], "Functional.gelu.0.forward.output.0");
  EXPECT_EQ(d[2][0], "Functional.gelu.0.backward.output.0");
  EXPECT_EQ(d[4][0], "Torch.chunk.4.forward.output.1");
  EXPECT_EQ(d[1][4], "1.00000000000000");
  EXPECT_EQ(d[1][6], " ");
  EXPECT_EQ(d[1][22], "Max abs error is less than 0.001, consider as pass.\n");
  for (const auto& row : d) EXPECT_EQ(row.size(), acc_details_header().size());
}

TEST_F(AccResults, ResumeSkipsFinishedApisAndDropsHalfWrittenDetails) {
  std::string result, details;
  {
    AccResultFiles f = AccResultFiles::create(dir_.string());
    f.write("Functional.gelu.0", AccStatus::kPass, AccStatus::kPass, {passing()}, {passing()});
    result = f.result_path();
    details = f.details_path();
  }
  // A run killed after the details of Torch.cat.0 but before its result row.
  std::ofstream(details, std::ios::app) << "Torch.cat.0.forward.output.0,x,x,x\n";

  AccResultFiles g = AccResultFiles::resume(result);
  EXPECT_EQ(g.details_path(), details);
  EXPECT_TRUE(g.done("Functional.gelu.0"));
  EXPECT_FALSE(g.done("Torch.cat.0"));
  EXPECT_EQ(g.done_count(), 1u);
  g.write("Torch.cat.0", AccStatus::kError, AccStatus::kNone, {passing()}, {});
  const auto d = rows_of(details);
  ASSERT_EQ(d.size(), 4u);  // header, gelu forward + backward, cat once
  EXPECT_EQ(d[3][0], "Torch.cat.0.forward.output.0");
  EXPECT_EQ(d[3][1], "torch.float64");
  EXPECT_EQ(rows_of(result).size(), 3u);
}

TEST_F(AccResults, ResumeRejectsFilesThatAreNotResults) {
  const std::string bogus = (dir_ / "accuracy_checking_result_1.csv").string();
  std::ofstream(bogus) << "a,b\n1,2\n";
  EXPECT_THROW(AccResultFiles::resume(bogus), InputError);
  const std::string named = (dir_ / "other.csv").string();
  std::ofstream(named) << "API name,Forward Test Success,Backward Test Success,Message\n";
  EXPECT_THROW(AccResultFiles::resume(named), InputError);
  EXPECT_THROW(AccResultFiles::resume((dir_ / "accuracy_checking_result_9.csv").string()),
               InputError);
}

TEST(Csv, ParsesQuotedCellsAndRejectsOpenQuotes) {
  const auto rows = csv_parse("a,\"b,\"\"c\"\"\nd\",e\r\n\n,x\n", "t.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"a", "b,\"c\"\nd", "e"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"", "x"}));
  EXPECT_THROW(csv_parse("a,\"b\n", "t.csv"), InputError);
  std::string line;
  csv_append_cell(line, "x");
  csv_append_cell(line, "a,\"b\"");
  EXPECT_EQ(line, "x,\"a,\"\"b\"\"\"");
  EXPECT_TRUE(csv_starts_like_formula("=1+1"));
  EXPECT_FALSE(csv_starts_like_formula("Functional.gelu.0"));
}

}  // namespace
}  // namespace numprobe
