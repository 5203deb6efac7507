// Compares two checkpoints parameter by parameter: msprobe's metrics (l2 = ||a - b||, cos = the
// cosine of the flattened tensors, numel, shape) plus max absolute / relative error and a status,
// one tensor pair at a time through the compare engine's fused kernel (tensor_metrics).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"

namespace numprobe::ckpt {

// Status thresholds (docs/config_check.md "Checkpoint compare"): pass when cos >= kPassCos and
// max relative error <= kPassMaxRel; warning when cos >= kWarnCos (one-element tensors, which have
// no meaningful cosine: max relative error <= kWarnMaxRel), or when the dtypes differ; error
// otherwise, and for NaN/Inf at different places, a zero tensor against a non-zero one, shape
// mismatches, dtypes numprobe cannot decode and parameters found on one side only.
inline constexpr double kPassCos = 0.9999;
inline constexpr double kPassMaxRel = 1e-3;
inline constexpr double kWarnCos = 0.99;
inline constexpr double kWarnMaxRel = 1e-2;

enum class ParamStatus { kPass = 0, kWarning = 1, kError = 2 };
const char* status_name(ParamStatus s);

struct ParamResult {
  std::string name;
  ParamStatus status = ParamStatus::kPass;
  std::string reason;  // why not pass; empty when pass
  char only_in = 0;    // 'a' or 'b': the parameter is missing on the other side
  bool compared = false;
  std::optional<double> l2, cos;  // msprobe's None where it has none (cos of a zero side)
  std::optional<double> max_abs, max_rel;
  size_t numel_a = 0, numel_b = 0;
  std::vector<int64_t> shape_a, shape_b;
  std::string dtype_a, dtype_b;
};

struct CompareSummary {
  size_t compared = 0, pass = 0, warning = 0, error = 0;
  size_t only_a = 0, only_b = 0, shape_mismatch = 0, dtype_mismatch = 0;
  size_t bytes = 0;  // tensor bytes read, both sides
};

struct CkptCompareResult {
  std::vector<ParamResult> params;  // worst first
  CompareSummary summary;
};

// Streams every common parameter (in the order of a's files, so that reads are sequential) and
// drops each pair's pages after use: memory stays at one tensor pair. Results sorted worst first:
// errors, warnings, passes; within a status lowest cos first, then largest l2, then name.
CkptCompareResult compare_checkpoints(const Checkpoint& a, const Checkpoint& b);

// The order of compare_checkpoints' output (exposed for tests).
void sort_worst_first(std::vector<ParamResult>& params);

}  // namespace numprobe::ckpt
