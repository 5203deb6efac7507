// An optimizer step inside the dumped span (start() before the forward, stop() after
// optimizer.step()) runs outside every module, after the backward pass. A for-loop optimizer's
// per-parameter calls are dumped (Tensor.mul_, Tensor.addcdiv_, ...); a foreach or fused one calls
// kernels no dump hooks and leaves nothing there. Those calls of the one run have no partner by
// construction, and are not a part of the two runs that went uncompared: what the step computed is
// compared at the next step's parameters (docs/compare.md, "Same math, other kernels").
#pragma once

#include <cstddef>
#include <vector>

#include "numprobe/compare.h"

namespace numprobe {

// Rows of the forward API calls one run makes outside every module after its last backward entry,
// where the other run makes none there and none of them paired; 0 without construct.json on both
// sides. The pair's coverage leaves them out (pair_coverage); they stay unmatched rows.
size_t unrecorded_optimizer_step_rows(const PairResult& p);
// The same rows, per row of p.rows (empty when there are none).
std::vector<bool> unrecorded_optimizer_step(const PairResult& p);

}  // namespace numprobe
