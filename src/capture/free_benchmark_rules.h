// free_benchmark's judgement and its CSV row, shared by every front that runs the task (the
// libtorch C++ API today; docs/capture.md, "free_benchmark"). Torch-free: dtypes are numprobe's.
// The values are msprobe's (its free_benchmark constants): the noise a perturbation adds per dtype,
// which is also the absolute tolerance of the ratio, and the ratio's consistency threshold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "numprobe/dtype.h"

namespace numprobe::capture {

// add_noise's noise for a floating dtype (bf16 1e-4, fp16 1e-6, fp32 1e-8, fp64 1e-16); 0 for
// other dtypes (nothing is added).
double free_benchmark_noise(DType t);
// The forward ratio's absolute tolerance: sqrt(noise) of the perturbed output's dtype (fp32's
// when it has none). The backward stage uses kFreeBenchmarkBackwardAbsTol.
double free_benchmark_abs_tol(DType perturbed);
inline constexpr double kFreeBenchmarkBackwardAbsTol = 1e-3;
// The consistency threshold of the ratio for an output dtype: fp16 1.002, bf16 1.004, other
// floats fp32's 1.0002; exactly 1 for pert_mode no_change (a re-run must reproduce the output).
double free_benchmark_threshold(DType output, bool no_change);

// to_cpu (msprobe's single benchmark): an output is consistent when its largest relative error,
// its largest absolute error among small values (both against cpu_rtol) and its error balance
// (against kCpuErrBalance) are within bounds.
double free_benchmark_cpu_rtol(DType output);  // fp32 2^-14, fp16 2^-11, bf16 2^-8
inline constexpr double kFreeBenchmarkCpuSmallValue = 1.0;
inline constexpr double kFreeBenchmarkCpuErrBalance = 1e-4;

// One row of free_benchmark.csv (msprobe's UnequalRow).
struct FreeBenchmarkRow {
  int64_t rank = 0;
  std::string pert_mode;
  std::string stage;  // "forward" or "backward"
  int64_t step = 0;
  std::string api_name;           // the entry: "Aten.sub.Tensor.0.forward"
  std::optional<double> max_rel;  // empty when not comparable
  bool symbol_flipping = false;   // a sign flip: the max_rel cell names the rule, as msprobe's
  std::string dtype;              // as torch prints it: "torch.float32"
  std::string shape;              // as torch prints it: "torch.Size([4, 8])"
  std::optional<int64_t> output_index;  // empty for an API with one output
};
inline constexpr const char* kFreeBenchmarkCsvName = "free_benchmark.csv";
// The header line, then a row, as Python's csv.writer writes them (CRLF, minimal quoting, floats
// as repr()).
std::string free_benchmark_csv_header();
std::string free_benchmark_csv_line(const FreeBenchmarkRow& row);
// Appends one row to <dir>/free_benchmark.csv under an exclusive flock (ranks share the file),
// writing the header first when the file is new; creates dir. Throws Error naming the file.
void append_free_benchmark_row(const std::string& dir, const FreeBenchmarkRow& row);

}  // namespace numprobe::capture
