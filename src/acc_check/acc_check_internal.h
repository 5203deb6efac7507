// Shared between the acc-check sources; not part of the public API.
#pragma once

#include "numprobe/acc_check.h"

namespace numprobe {

// msprobe's absolute-threshold standard per dtype: rtol for normal values, the |bench| below
// which a value counts as small, and the atol small values are held to.
struct AbsoluteThresholds {
  double rtol, small_value, small_value_atol;
};
AbsoluteThresholds absolute_thresholds(AccDtype d);

// For tests: the API tables must stay sorted for binary search.
bool acc_standard_tables_sorted();

}  // namespace numprobe
