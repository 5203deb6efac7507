// Which precision standard judges an API, and the per-dtype thresholds of the absolute-threshold
// standard. Lists follow msprobe's api_precision_standard / api_precision_threshold tables.
#include <algorithm>
#include <iterator>
#include <string_view>

#include "acc_check/acc_check_internal.h"
#include "numprobe/acc_check.h"

namespace numprobe {
namespace {

// Sorted, so lookups are binary searches.
constexpr std::string_view kAbsoluteThreshold[] = {
    "__add__", "__div__",  "__iadd__", "__idiv__",   "__imul__",    "__isub__",
    "__mul__", "__radd__", "__rmul__", "__sub__",    "add",         "add_",
    "div",     "div_",     "divide",   "divide_",    "leaky_relu",  "leaky_relu_",
    "mul",     "mul_",     "prelu",    "reciprocal", "reciprocal_", "rsqrt",
    "rsqrt_",  "rsub",     "square",   "square_",    "sub",         "sub_"};

constexpr std::string_view kBinary[] = {
    "abs",           "abs_",           "absolute",    "absolute_",   "argmin",       "bitwise_and",
    "bitwise_and_",  "broadcast_to",   "ceil",        "ceil_",       "equal",        "fill_",
    "flatten",       "floor",          "floor_",      "gather",      "greater",      "greater_",
    "greater_equal", "greater_equal_", "histc",       "isfinite",    "isnan",        "less",
    "less_",         "less_equal",     "less_equal_", "logical_and", "logical_and_", "logical_not",
    "logical_not_",  "logical_or",     "logical_or_", "masked_fill", "masked_fill_", "max_pool3d",
    "maximum",       "minimum",        "neg",         "neg_",        "nonzero",      "not_equal",
    "not_equal_",    "one_hot",        "pad",         "relu",        "reshape",      "round",
    "round_",        "select",         "sign",        "sign_",       "sort",         "tile",
    "topk",          "transpose",      "transpose_",  "tril",        "tril_",        "triu",
    "triu_",         "type_as"};

constexpr std::string_view kUlp[] = {"__matmul__", "addbmm",   "addbmm_",  "addmm", "addmm_",
                                     "baddbmm",    "baddbmm_", "bilinear", "bmm",   "chain_matmul",
                                     "hspmm",      "linear",   "matmul",   "mm",    "mv",
                                     "smm",        "sspaddmm"};

constexpr std::string_view kThousandth[] = {"conv1d", "conv2d"};

template <size_t N>
bool listed(const std::string_view (&list)[N], std::string_view op) {
  return std::binary_search(std::begin(list), std::end(list), op);
}

template <size_t N>
bool sorted(const std::string_view (&list)[N]) {
  return std::is_sorted(std::begin(list), std::end(list));
}

}  // namespace

const char* acc_standard_name(AccStandard s) {
  switch (s) {
    case AccStandard::kAbsoluteThreshold:
      return "absolute_threshold";
    case AccStandard::kBinary:
      return "binary_consistency";
    case AccStandard::kUlp:
      return "ulp";
    case AccStandard::kThousandth:
      return "thousandth";
    case AccStandard::kBenchmark:
      break;
  }
  return "benchmark";
}

AccStandard acc_standard_for(std::string_view op) {
  // Aten overloads ("addmm.default", "add.Tensor") are judged by their op name.
  if (size_t dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  if (listed(kAbsoluteThreshold, op)) return AccStandard::kAbsoluteThreshold;
  if (listed(kBinary, op)) return AccStandard::kBinary;
  if (listed(kUlp, op)) return AccStandard::kUlp;
  if (listed(kThousandth, op)) return AccStandard::kThousandth;
  return AccStandard::kBenchmark;
}

AbsoluteThresholds absolute_thresholds(AccDtype d) {
  switch (d) {
    case AccDtype::kFloat16:
      return {1e-3, 1e-3, 1e-5};
    case AccDtype::kBFloat16:
      return {4e-3, 1e-3, 1e-5};
    default:
      return {1e-6, 1e-6, 1e-9};
  }
}

bool acc_standard_tables_sorted() {
  return sorted(kAbsoluteThreshold) && sorted(kBinary) && sorted(kUlp) && sorted(kThousandth);
}

}  // namespace numprobe
