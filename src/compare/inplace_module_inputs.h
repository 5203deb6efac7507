// Known differences in how msprobe and numprobe record in-place operations. msprobe records an
// in-place module's input after the module ran: ReLU(inplace=True) shows an
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

// msprobe 26 on torch 2.x records the backward entry of an in-place API applied to a module's input
// (ReLU(inplace=True)'s relu_, Dropout(inplace=True)) with the incoming gradient as its output: its
// hook sits on the view node autograd puts after the in-place op, which passes gradients through
// (numprobe hooks the op's own node: docs/capture.md, "Observer effect"). In a paired API backward
// entry whose forward ran in place (an op named `*_` or `__i*__`, or an `inplace` argument that is
// True), an output row that equals the entry's input gradient on one side only is excused with
// reason "inplace_backward_passthrough". Returns how many rows were excused.
size_t excuse_inplace_backward_passthrough(PairResult& p);

}  // namespace numprobe
