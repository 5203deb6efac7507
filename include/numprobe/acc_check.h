// acc-check verdicts: msprobe's per-output metrics and precision standards for one replayed API
// output (device result against a high-precision CPU reference), without torch. The replay itself
// (building inputs, running the API) lives in python/numprobe/acc_check and src/replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace numprobe {

// msprobe's precision standards (api_precision_standard): which rule judges an API's outputs.
enum class AccStandard : uint8_t {
  kBenchmark,          // everything else: compared against the reference by relative error
  kAbsoluteThreshold,  // mul/add/div/sub family, rsqrt, square, ...: per-element rtol/atol
  kBinary,             // relu, transpose, gather, sort, ...: must be bitwise equal
  kUlp,                // matmul family: ULP error
  kThousandth,         // conv1d/conv2d: share of elements with rel err < 1e-3
};
const char* acc_standard_name(AccStandard s);
// op is the bare API name of a dump key ("gelu" for Functional.gelu.0, "__mul__", "addmm"). For
// an aten overload name ("addmm.default") the part before the first '.' decides.
AccStandard acc_standard_for(std::string_view op);

enum class AccStatus : uint8_t { kPass, kWarning, kError, kSkip, kNone };
// "pass", "warning", "error", "SKIP"; kNone is msprobe's blank (" ").
const char* acc_status_name(AccStatus s);
// The worse of two statuses: error > warning > pass; kSkip and kNone never win over a verdict.
AccStatus acc_worse(AccStatus a, AccStatus b);

// One row of accuracy_checking_details: every metric msprobe writes, unset when msprobe leaves the
// cell blank for this standard or dtype.
struct AccColumns {
  std::string bench_dtype;   // "torch.float64"
  std::string device_dtype;  // "torch.float32"
  std::string shape;         // "(4, 16)" as Python prints a tuple
  std::optional<double> cosine, max_abs_err, rel_err_hundredth, rel_err_thousandth,
      rel_err_ten_thousandth, error_rate, eb, rmse, small_value_err_ratio, max_rel_err,
      mean_rel_err, inf_nan_error_ratio, rel_err_ratio, abs_err_ratio, max_ulp_error,
      mean_ulp_error, ulp_error_proportion;
  // Beyond msprobe: ||device - bench||_2 / ||bench||_2 over finite elements and the bound it was
  // held to (see docs/acc_check.md); reported in the message.
  std::optional<double> rel_l2;
  AccStatus status = AccStatus::kNone;
  std::string message;
};

// Element kinds the metrics distinguish (from the device tensor's dtype name).
enum class AccDtype : uint8_t { kFloat16, kBFloat16, kFloat32, kFloat64, kInteger, kBool, kOther };
AccDtype acc_dtype_from_name(std::string_view torch_dtype);

// n values of a tensor of torch dtype `dtype`, held as float64 or float32: float32 is exact for
// float32/float16/bfloat16 tensors and spares the comparison a widened copy; integer and bool
// tensors come as float64 (int64 beyond 2^53 rounds).
struct AccTensorView {
  AccTensorView() = default;
  AccTensorView(const double* values, size_t count, std::string torch_dtype)
      : f64(values), n(count), dtype(std::move(torch_dtype)) {}
  AccTensorView(const float* values, size_t count, std::string torch_dtype)
      : f32(values), n(count), dtype(std::move(torch_dtype)) {}
  const double* f64 = nullptr;  // exactly one of f64 and f32 is set
  const float* f32 = nullptr;
  size_t n = 0;
  std::string dtype;  // torch name, "torch.float32"
};

// Compares one output: msprobe's single-run cascade (cosine > 0.99, max abs < 1e-3, then the
// hundredth/thousandth/ten-thousandth ratios by dtype), the API's standard metrics, and the
// standard's own absolute verdict where it has one without a second device run (absolute
// threshold, binary, ULP, thousandth) or numprobe's dtype-scaled relative L2 bound for the
// benchmark standard. status is the worst of these; message says which rule decided.
AccColumns acc_compare_output(std::string_view op, const AccTensorView& bench,
                              const AccTensorView& device, std::string shape);

// A row for an output that could not be compared (shape or structure mismatch, None output).
AccColumns acc_unusable_output(AccStatus status, std::string message);

// Numeric cell the way msprobe writes it: "{:.14f}", "nan", "inf"; blank (" ") when unset.
std::string acc_format_number(const std::optional<double>& v, int precision = 14);

// accuracy_checking_result_{ts}.csv / accuracy_checking_details_{ts}.csv, msprobe's columns.
// Each API's rows are appended and flushed together, details first, so a run killed at any
// moment resumes (resume()) with no API lost or duplicated.
class AccResultFiles {
 public:
  // New files in out_dir named with the local time (YYYYmmddHHMMSS).
  static AccResultFiles create(const std::string& out_dir);
  // Continue an interrupted run: result_csv is an accuracy_checking_result_*.csv; the details file
  // beside it is found by name. Details rows of APIs absent from the result file (the run died
  // between the two writes) are dropped first, unless drop_unfinished is false (the workers of
  // multi-acc-check attach to files their parent has already cleaned).
  static AccResultFiles resume(const std::string& result_csv, bool drop_unfinished = true);

  const std::string& result_path() const { return result_path_; }
  const std::string& details_path() const { return details_path_; }
  bool done(std::string_view api) const;
  size_t done_count() const { return done_.size(); }

  // api: "Functional.gelu.0". forward/backward: one AccColumns per output, in order. message: the
  // Message column (why the API, or its backward, was skipped or not compared), "" when clean.
  void write(const std::string& api, AccStatus fwd, AccStatus bwd,
             const std::vector<AccColumns>& forward, const std::vector<AccColumns>& backward,
             const std::string& message = {});

 private:
  std::string result_path_, details_path_;
  std::vector<std::string> done_;  // sorted
};

// Column headers, exactly msprobe's.
const std::vector<std::string>& acc_result_header();
const std::vector<std::string>& acc_details_header();

}  // namespace numprobe
