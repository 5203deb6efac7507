// free_benchmark's thresholds and its CSV rows (free_benchmark_rules.cc), written as Python's
// csv.writer writes the Python front's rows.
#include "capture/free_benchmark_rules.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace numprobe::capture;
using numprobe::DType;

namespace {

TEST(FreeBenchmarkRules, ThresholdsPerDtype) {
  EXPECT_DOUBLE_EQ(free_benchmark_threshold(DType::kF16, false), 1.002);
  EXPECT_DOUBLE_EQ(free_benchmark_threshold(DType::kBF16, false), 1.004);
  EXPECT_DOUBLE_EQ(free_benchmark_threshold(DType::kF32, false), 1.0002);
  EXPECT_DOUBLE_EQ(free_benchmark_threshold(DType::kF64, false), 1.0002);
  EXPECT_DOUBLE_EQ(free_benchmark_threshold(DType::kBF16, true), 1.0);
  EXPECT_DOUBLE_EQ(free_benchmark_abs_tol(DType::kF32), 1e-4);
  EXPECT_DOUBLE_EQ(free_benchmark_abs_tol(DType::kI64), 1e-4);  // fp32's where none
  EXPECT_DOUBLE_EQ(free_benchmark_noise(DType::kI64), 0);
}

// Expected text: Python's csv.writer(f).writerow([...]) of the same values.
TEST(FreeBenchmarkRules, CsvLineAsPythonWritesIt) {
  EXPECT_EQ(free_benchmark_csv_header(),
            "rank,pert_mode,stage,step,api_name,max_rel,dtype,shape,output_index\r\n");
  FreeBenchmarkRow r;
  r.rank = 0;
  r.pert_mode = "bit_noise";
  r.stage = "forward";
  r.step = 3;
  r.api_name = "Aten.sub.Tensor.0.forward";
  r.max_rel = 0.3333333333333333;
  r.dtype = "torch.float32";
  r.shape = "torch.Size([4, 8])";
  EXPECT_EQ(free_benchmark_csv_line(r),
            "0,bit_noise,forward,3,Aten.sub.Tensor.0.forward,0.3333333333333333,torch.float32,"
            "\"torch.Size([4, 8])\",\r\n");
  r.max_rel.reset();
  r.output_index = 1;
  r.shape = "torch.Size([])";
  EXPECT_EQ(free_benchmark_csv_line(r),
            "0,bit_noise,forward,3,Aten.sub.Tensor.0.forward,,torch.float32,torch.Size([]),1\r\n");
  r.symbol_flipping = true;
  EXPECT_EQ(free_benchmark_csv_line(r),
            "0,bit_noise,forward,3,Aten.sub.Tensor.0.forward,symbol_flipping,torch.float32,"
            "torch.Size([]),1\r\n");
}

TEST(FreeBenchmarkRules, AppendWritesTheHeaderOnce) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("np_fb_rules_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  FreeBenchmarkRow r;
  r.api_name = "Aten.sub.Tensor.0.forward";
  append_free_benchmark_row(dir.string(), r);
  r.api_name = "Aten.sub.Tensor.1.forward";
  append_free_benchmark_row(dir.string(), r);
  std::ifstream f(dir / kFreeBenchmarkCsvName, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str(), free_benchmark_csv_header() +
                            "0,,,0,Aten.sub.Tensor.0.forward,,,,\r\n"
                            "0,,,0,Aten.sub.Tensor.1.forward,,,,\r\n");
  std::filesystem::remove_all(dir);
}

TEST(FreeBenchmarkRules, AnUnwritableDirectoryIsAnErrorNamingTheFile) {
  FreeBenchmarkRow r;
  try {
    append_free_benchmark_row("/proc/numprobe_no_such_dir", r);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/numprobe_no_such_dir/free_benchmark.csv"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
