// numprobe grad-compare run1 run2 -o out: two grad_probe runs' gradient directions per step and
// parameter (msprobe's GradComparator similarity), the first step and parameter where they part,
// msprobe's similarities.csv, and one HTML page (docs/capture.md, "grad_probe").
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/subcommand.h"
#include "grad_probe/grad_compare.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

double parse_fraction(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(v >= 0 && v <= 1))
    throw Error(flag + " \"" + text + "\" is not a number in [0, 1]");
  return v;
}

class GradCompareCommand : public Subcommand {
 public:
  const char* name() const override { return "grad-compare"; }
  const char* summary() const override {
    return "Gradient direction similarity of two grad_probe runs per step and parameter; names "
           "the first disagreement (grad_compare.json, similarities.csv, grad_compare.html)";
  }
  std::vector<Flag> flags() override {
    return {{"runs", "the two runs' dump_path directories", Flag::kStrings, &runs_},
            {"-i,--input1", "run1 (msprobe's spelling; instead of the first positional)",
             Flag::kString, &in1_},
            {"-j,--input2", "run2", Flag::kString, &in2_},
            {"-o,--out", "output directory (created)", Flag::kString, &out_, true},
            {"--threshold", "a similarity below this disagrees (default 0.97)", Flag::kString,
             &threshold_},
            {"--drop", "a fall larger than this since the previous step disagrees (default 0.03)",
             Flag::kString, &drop_}};
  }
  int run() override {
    std::vector<std::string> runs = runs_;
    if (!in1_.empty()) runs.insert(runs.begin(), in1_);
    if (!in2_.empty()) runs.push_back(in2_);
    if (runs.size() != 2)
      throw Error("expected two run directories (run1 run2, or -i run1 -j run2), got " +
                  std::to_string(runs.size()));
    grad_probe::GradCompareOptions opt;
    opt.threshold = parse_fraction("--threshold", threshold_);
    opt.drop = parse_fraction("--drop", drop_);
    const auto r = grad_probe::compare_grad_runs(runs[0], runs[1], opt);
    const std::string path = grad_probe::write_grad_compare(r, out_);
    size_t steps = 0;
    for (const auto& rc : r.ranks) steps += rc.steps.size();
    printf("compared %zu rank(s), %zu step(s)\n", r.ranks.size(), steps);
    for (const auto& g : r.gaps)
      printf("gap: rank %lld%s%s: %s\n", static_cast<long long>(g.rank),
             g.step < 0 ? "" : (" step " + std::to_string(g.step)).c_str(),
             g.parameter.empty() ? "" : (" " + g.parameter).c_str(), g.what.c_str());
    if (r.first)
      printf("first disagreement: step %lld rank %lld parameter %s similarity %.6f (%s)\n",
             static_cast<long long>(r.first->step), static_cast<long long>(r.first->rank),
             r.first->parameter.c_str(), r.first->similarity, r.first->rule.c_str());
    else
      printf("the runs agree at every compared step\n");
    printf("result: %s\n", path.c_str());
    return 0;
  }

 private:
  std::vector<std::string> runs_;
  std::string in1_, in2_, out_, threshold_ = "0.97", drop_ = "0.03";
};

}  // namespace

std::unique_ptr<Subcommand> make_grad_compare_command() {
  return std::make_unique<GradCompareCommand>();
}

}  // namespace numprobe::cli
