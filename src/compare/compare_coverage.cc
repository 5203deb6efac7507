#include "compare/optimizer_step.h"
#include "compare/summary_writer.h"
#include "numprobe/compare.h"

namespace numprobe {

const char* coverage_name(Coverage c) {
  switch (c) {
    case Coverage::kCompared:
      return "compared";
    case Coverage::kMostlyUnmatched:
      return "mostly_unmatched";
    case Coverage::kNothingCompared:
      return "nothing_compared";
  }
  return "compared";
}

Coverage pair_coverage(const PairResult& p) {
  if (p.matched == 0) return Coverage::kNothingCompared;
  // An optimizer step one run records call by call and the other in unhooked kernels has no
  // partner by construction (optimizer_step.h): not a part of the runs left uncompared.
  const size_t unmatched = p.unmatched_target + p.unmatched_golden;
  if (unmatched > p.matched && unmatched - unrecorded_optimizer_step_rows(p) > p.matched)
    return Coverage::kMostlyUnmatched;
  return Coverage::kCompared;
}

Coverage combine_coverage(const std::vector<Coverage>& pairs) {
  bool any_compared = false, all_compared = true;
  for (const Coverage c : pairs) {
    any_compared = any_compared || c != Coverage::kNothingCompared;
    all_compared = all_compared && c == Coverage::kCompared;
  }
  if (!any_compared) return Coverage::kNothingCompared;
  return all_compared ? Coverage::kCompared : Coverage::kMostlyUnmatched;
}

Coverage report_coverage(const CompareReport& rep) {
  std::vector<Coverage> pairs;
  pairs.reserve(rep.pairs.size());
  for (const PairResult& p : rep.pairs) pairs.push_back(pair_coverage(p));
  return combine_coverage(pairs);
}

}  // namespace numprobe
