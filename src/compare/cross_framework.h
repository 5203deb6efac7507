// What differs between a MindSpore and a PyTorch run of the same model by construction, not by a
// numerical fault (docs/compare.md, "MindSpore against PyTorch").
#pragma once

#include <cstddef>

#include "numprobe/compare.h"

namespace numprobe {

// MindSpore's autodiff returns a gradient for every tensor input of a call (zeros where nothing
// flows, e.g. the target of mse_loss or a masked_fill mask); PyTorch returns None for inputs that
// do not require grad. In a pair whose two dumps name different frameworks, a paired backward
// output row that is a tensor on one side and null on the other is excused (status pass, reason
// "gradient_one_framework"): it is no evidence for the first divergence. Returns how many rows.
size_t excuse_one_framework_gradients(PairResult& p);

}  // namespace numprobe
