// numprobe ckpt-compare <a> <b> -o out.json [--csv]: are the weights of two checkpoints equal?
#include <chrono>
#include <cstdio>

#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_compare.h"
#include "ckpt/ckpt_report.h"
#include "cli/subcommand.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

class CkptCompareCommand : public Subcommand {
 public:
  const char* name() const override { return "ckpt-compare"; }
  const char* summary() const override {
    return "Compare the weights of two checkpoints (safetensors, torch.save .pt/.bin, sharded "
           "directories, Megatron trees, .npy directories): l2, cos, max errors per parameter";
  }
  std::vector<Flag> flags() override {
    return {
        {"checkpoints", "the two checkpoints: a (compared) and b (the baseline)", Flag::kStrings,
         &paths_, true},
        {"-o,--out", "output JSON (msprobe's {param: {l2, cos, numel, shape}} and more)",
         Flag::kString, &out_, true},
        {"--csv", "also write the table as CSV beside the JSON (out.csv)", Flag::kBool, &csv_},
    };
  }

  int run() override {
    if (paths_.size() != 2) throw Error("ckpt-compare takes exactly two checkpoints");
    const auto t0 = std::chrono::steady_clock::now();
    const ckpt::Checkpoint a = ckpt::Checkpoint::open(paths_[0]);
    const ckpt::Checkpoint b = ckpt::Checkpoint::open(paths_[1]);
    const ckpt::CkptCompareResult r = ckpt::compare_checkpoints(a, b);
    ckpt::write_reports(r, out_, csv_);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_summary(a, b, r, secs);
    if (r.summary.compared == 0) {
      fprintf(stderr, "numprobe ckpt-compare: error: no parameter was compared\n");
      return 1;
    }
    return 0;
  }

 private:
  void print_summary(const ckpt::Checkpoint& a, const ckpt::Checkpoint& b,
                     const ckpt::CkptCompareResult& r, double secs) const {
    const ckpt::CompareSummary& s = r.summary;
    printf("a: %s (%s, %zu tensors", a.path().c_str(), a.kind().c_str(), a.tensors().size());
    if (!a.placeholders().empty()) printf(", %zu other objects skipped", a.placeholders().size());
    printf(")\nb: %s (%s, %zu tensors", b.path().c_str(), b.kind().c_str(), b.tensors().size());
    if (!b.placeholders().empty()) printf(", %zu other objects skipped", b.placeholders().size());
    printf(")\n");
    printf(
        "compared %zu: %zu pass, %zu warning, %zu error; only in a %zu, only in b %zu, "
        "shape mismatch %zu, dtype mismatch %zu\n",
        s.compared, s.pass, s.warning, s.error, s.only_a, s.only_b, s.shape_mismatch,
        s.dtype_mismatch);
    printf("%.2f GB read in %.2f s (%.2f GB/s)\n", static_cast<double>(s.bytes) / 1e9, secs,
           secs > 0 ? static_cast<double>(s.bytes) / 1e9 / secs : 0.0);
    size_t shown = 0;
    for (const ckpt::ParamResult& p : r.params) {
      if (p.status == ckpt::ParamStatus::kPass || shown == 5) break;
      if (shown++ == 0) printf("worst:\n");
      printf("  %-7s %s", ckpt::status_name(p.status), p.name.c_str());
      if (p.cos) printf("  cos %.6f", *p.cos);
      if (p.l2) printf("  l2 %.6g", *p.l2);
      printf("  (%s)\n", p.reason.c_str());
    }
    printf("wrote %s%s\n", out_.c_str(), csv_ ? (" and " + ckpt::csv_path_for(out_)).c_str() : "");
  }

  std::vector<std::string> paths_;
  std::string out_;
  bool csv_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> make_ckpt_compare_command() {
  return std::make_unique<CkptCompareCommand>();
}

}  // namespace numprobe::cli
