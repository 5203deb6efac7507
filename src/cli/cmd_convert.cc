// numprobe convert <mindspore_dump_dir> -o <out>: MindSpore's kernel dump (graph mode, L2) as
// msprobe's dump layout (src/convert, docs/formats/mindspore_dump.md).
#include <cstdio>

#include "cli/subcommand.h"
#include "convert/ms_dump_convert.h"

namespace numprobe::cli {
namespace {

class ConvertCommand : public Subcommand {
 public:
  const char* name() const override { return "convert"; }
  const char* summary() const override {
    return "Convert a MindSpore kernel dump (MINDSPORE_DUMP_CONFIG, graph mode) to msprobe's dump "
           "layout";
  }
  std::vector<Flag> flags() override {
    return {
        {"input", "the dump config's \"path\" (holding rank_<N>/) or one rank_<N> directory",
         Flag::kString, &in_, true},
        {"-o,--out", "output directory (new, or without step<N> directories)", Flag::kString, &out_,
         true},
        {"--statistics-only", "write statistics only, no tensor copies", Flag::kBool, &stats_only_},
        {"--no-parameters", "leave out graph inputs (Parameter.* files)", Flag::kBool,
         &no_params_}};
  }

  int run() override {
    convert::ConvertOptions opt;
    opt.out = out_;
    opt.tensors = !stats_only_;
    opt.parameters = !no_params_;
    convert::ConvertReport r = convert::convert_mindspore_dump(in_, opt);
    for (const std::string& d : r.rank_dirs) printf("wrote %s\n", d.c_str());
    printf("%s: %zu rank(s), %zu step dump(s), %zu entries, %zu tensor files\n", in_.c_str(),
           r.ranks, r.steps, r.entries, r.tensor_files);
    for (const convert::MsDumpProblem& p : r.problems)
      fprintf(stderr, "numprobe convert: problem: %s: %s\n", p.path.c_str(), p.what.c_str());
    if (!r.problems.empty())
      fprintf(stderr, "numprobe convert: %zu problem(s); converted as far as the dump goes\n",
              r.problems.size());
    // 2: converted, with problems (a script can tell a partial conversion from a clean one).
    return r.problems.empty() ? 0 : 2;
  }

 private:
  std::string in_, out_;
  bool stats_only_ = false, no_params_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> make_convert_command() {
  return std::make_unique<ConvertCommand>();
}

}  // namespace numprobe::cli
