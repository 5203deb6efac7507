// Tensor-mode metrics between a target and a golden tensor, with msprobe's definitions
// (reference/msprobe.md 2.4) and its bugs fixed (docs/compare.md):
//  - cosine, Euclidean distance, max absolute error, max relative error |t-g|/|g|, and the
//    fractions of elements whose relative error is within 0.1 % / 0.5 %;
//  - where golden is 0 the relative error is |t| / eps(golden dtype), not msprobe's |t| / 2.2e-16
//    (which reports 4.5e12 for a 1e-3 difference);
//  - the 0.1 % / 0.5 % thresholds are inclusive and widened by one epsilon of the golden dtype, so
//  a
//    uniform 1.001 scaling of fp32 data counts as within 0.1 % (msprobe's strict '<' says 0 %);
//  - NaN/Inf at the same positions on both sides are excluded; at different positions nothing is
//    computed and the reason says so.
#pragma once

#include <cstddef>
#include <string>

#include "numprobe/dtype.h"

namespace numprobe {

enum class TensorVerdictReason : uint8_t {
  kOk,
  kEmpty,           // nothing to compare
  kZeroDim,         // 0-d: only max abs / max rel errors
  kLengthOne,       // 1 element: no cosine
  kShapeMismatch,   // element counts differ
  kNanInfMismatch,  // NaN/Inf at different positions
};

struct TensorMetrics {
  TensorVerdictReason reason = TensorVerdictReason::kOk;
  bool has_cosine = false;
  double cosine = 0;  // NaN when exactly one side is all zeros
  bool cosine_zero_side = false;
  bool has_euclidean = false;
  double euclidean = 0;
  bool has_errors = false;  // max abs / max rel
  double max_abs = 0;
  double max_rel = 0;
  bool has_ratios = false;
  double one_thousandth = 0;    // fraction with rel err <= 0.001 (+ eps)
  double five_thousandths = 0;  // fraction with rel err <= 0.005 (+ eps)
};

// t and g hold t_count / g_count elements of their dtypes (any DType of dtype.h but kUnknown),
// read in one streaming pass (no full-size copies). golden_dtype sets the epsilon (usually
// g_dtype; dump.json's dtype when files were narrowed). zero_dim: the tensors are 0-d.
TensorMetrics tensor_metrics(const void* t, DType t_dtype, size_t t_count, const void* g,
                             DType g_dtype, size_t g_count, DType golden_dtype,
                             bool zero_dim = false);
// The same over elements already decoded to double.
TensorMetrics tensor_metrics(const double* t, size_t t_count, const double* g, size_t g_count,
                             DType golden_dtype, bool zero_dim = false);

// Decodes count elements of dtype at data to double (every DType of dtype.h). Throws Error for
// kUnknown.
void decode_to_double(const void* data, size_t count, DType dtype, double* out);

// Machine epsilon of a floating dtype (2^-52 f64, 2^-23 f32, 2^-10 f16, 2^-7 bf16, fp8 per
// format); 0 for integers and bool, whose values compare exactly.
double dtype_epsilon(DType dtype);

}  // namespace numprobe
