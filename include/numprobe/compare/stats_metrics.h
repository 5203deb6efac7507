// Statistics-mode and md5-mode metrics, with msprobe's definitions (reference/msprobe.md 2.5,
// 2.6) and its summary-mode bugs fixed (docs/compare.md):
//  - "X diff" = target X - golden X; "XRelativeErr" = |diff / golden| * 100 (%), not applicable
//    when golden X is 0 or either side is not a number.
//  - Warning when any statistic has |diff| / (max(|target|, |golden|) + 1e-10) > 0.5 (msprobe
//    takes the signed max), or when exactly one side's statistic is NaN/Inf, or the sides disagree
//    on which stats are NaN (msprobe never flags NaN: it stores them as "Nan" and looks for "nan").
#pragma once

#include <string>

#include "numprobe/compare/rows.h"

namespace numprobe {

struct StatDiff {
  bool has_diff = false;  // both sides numeric
  double diff = 0;
  bool has_rel = false;  // has_diff and golden != 0
  double rel_percent = 0;
};

struct StatisticsMetrics {
  StatDiff max, min, mean, norm;
  bool warning = false;
  std::string reason;  // machine-readable: "", "magnitude", "nan_inf_mismatch"
};

StatisticsMetrics statistics_metrics(const CompareRow& target, const CompareRow& golden);

// "pass" when the CRC strings are equal, "Different" otherwise.
const char* md5_result(const CompareRow& target, const CompareRow& golden);

}  // namespace numprobe
