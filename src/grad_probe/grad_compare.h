// numprobe grad-compare: two grad_probe runs' gradient directions, step by step and parameter by
// parameter, as msprobe's GradComparator defines the similarity (the share of elements whose
// direction bit, grad > 0, agrees; a step's summary weighs every parameter by its element
// count), and the first step and parameter where the runs part (docs/capture.md, "grad_probe").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace numprobe::grad_probe {

struct GradCompareOptions {
  // A parameter disagrees at a step when its similarity is below `threshold`, or fell by more than
  // `drop` since its previous compared step (msprobe's documented rule of thumb: 0.97 and 0.03).
  double threshold = 0.97;
  double drop = 0.03;
};

struct ParamSeries {
  std::string name;
  std::vector<double> similarity;  // per step of the rank; NaN where a direction file is missing
  uint64_t numel = 0;              // elements of its direction files (the last compared step)
};

struct RankCompare {
  int64_t rank = 0;
  std::vector<int64_t> steps;       // compared steps, ascending
  std::vector<ParamSeries> params;  // in the summaries' order (the model's parameter order)
  std::vector<double> summary;      // per step: element-weighted similarity of all parameters
};

// Something one run has and the other lacks, named, never skipped silently.
struct GradGap {
  int64_t rank = -1;
  int64_t step = -1;      // -1: the whole rank
  std::string parameter;  // empty: the whole step
  std::string what;
};

struct Disagreement {
  int64_t rank = 0;
  int64_t step = 0;
  std::string parameter;
  double similarity = 0;
  std::string rule;                       // "below_threshold" or "drop"
  std::vector<std::string> also_at_step;  // other parameters of that step and rank that disagree
};

struct GradCompareResult {
  std::string run1, run2;
  GradCompareOptions options;
  std::vector<RankCompare> ranks;
  std::vector<GradGap> gaps;
  std::optional<Disagreement> first;  // earliest step, then rank, then parameter order
};

// Reads both dump paths (rank{N}/grad_summary_{S}.csv, rank{N}/step{S}/{param}.npy). A run that is
// not a grad_probe directory, a malformed summary, a direction file that is not a numpy bool array,
// or two direction files of one parameter with different shapes is an InputError naming the file;
// ranks, steps and parameters present in one run only become gaps. No compared step at all (runs
// at grad_level L0 have no direction files) is an Error.
GradCompareResult compare_grad_runs(const std::string& run1, const std::string& run2,
                                    const GradCompareOptions& opt);

// Writes into out_dir: grad_compare.json, rank{N}/similarities.csv (msprobe's layout) and
// grad_compare.html (one self-contained page). Returns the JSON's path.
std::string write_grad_compare(const GradCompareResult& r, const std::string& out_dir);

// The page alone (grad_compare_html.cc).
std::string render_grad_compare_html(const GradCompareResult& r);

}  // namespace numprobe::grad_probe
