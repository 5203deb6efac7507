// msprobe records an in-place module's input after the module ran: ReLU(inplace=True) shows an
// input whose minimum is 0, the same statistics as its output. numprobe records it before (what
// the module received). Both dumps are right about what they saw, so the input rows of such a
// module differ between an msprobe dump and a numprobe dump of the same computation; compare must
// not take that for a divergence (docs/compare.md, "In-place module inputs").
#pragma once

#include "numprobe/compare.h"

namespace numprobe {

// Finds, in paired Module forward entries, input rows recorded after the op on one side only: on
// that side input i has the statistics (and shape and dtype) of output i, on the other it does
// not, and the two sides' output i agree. Such a row is marked `excused` with reason
// "inplace_input_after_op" and status pass; the first-divergence judgement skips excused rows.
// Returns how many rows were excused.
size_t excuse_inplace_module_inputs(PairResult& p);

}  // namespace numprobe
