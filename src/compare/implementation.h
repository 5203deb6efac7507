// Modules whose two runs call other APIs for the same math (issue 36): an attention module run
// eagerly in one run and through scaled_dot_product_attention in the other, a hand-written norm
// against a one-call one, a mask built by other calls. Their inner calls cannot be compared one by
// one; the module is judged by what its calls produce, as seen by whoever consumes it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "numprobe/compare.h"

namespace numprobe {

// A paired module entry (forward or backward) whose direct API calls (those construct.json puts
// right inside it, not inside a child module) differ between the runs, as op names without call
// counters.
struct ImplementationRegion {
  uint32_t module = 0;                                   // target module entry
  uint32_t golden_module = 0;                            // its golden partner
  std::vector<uint32_t> target_entries, golden_entries;  // the direct calls
  std::vector<std::string> target_calls, golden_calls;   // "Tensor.__mul__.forward", ...
};

// Every such module of a pair; none without construct.json on both sides.
std::vector<ImplementationRegion> implementation_regions(const PairResult& p);

}  // namespace numprobe
