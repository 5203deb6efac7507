// numprobe graph -t <target> [-g <golden>] -o <out>: the hierarchical graph of a compare (or of one
// dump) in msprobe's .vis.db, for `numprobe serve` or tb-graph-ascend.
#include <cstdio>

#include "base/mapped_file.h"
#include "cli/merge_report.h"
#include "cli/subcommand.h"
#include "graph/graph_run.h"
#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

class GraphCommand : public Subcommand {
 public:
  const char* name() const override { return "graph"; }
  const char* summary() const override {
    return "Build the model graph of a compare (or of one dump) as msprobe's .vis.db";
  }
  std::vector<Flag> flags() override {
    return {
        {"-t,--target", "dump of the run that misbehaves (file, rank/step dir or root)",
         Flag::kString, &target_},
        {"-g,--golden", "dump of the benchmark run; leave out to build one graph", Flag::kString,
         &golden_},
        {"-i,--input", "msprobe compare.json (npu_path, bench_path?, parallel_merge?)",
         Flag::kString, &input_},
        {"-o,--out", "output directory (created), or a file name ending in .vis.db", Flag::kString,
         &out_, true},
        {"-dm,--data-mapping", "-dm: yaml 'target row: golden row' pairs (msprobe data_mapping)",
         Flag::kString, &mapping_.data_mapping},
        {"-cm,--cell-mapping", "-cm: compare Cell.* as Module.*; optional yaml of renames",
         Flag::kOptionalString, &mapping_.cell_mapping},
        {"-am,--api-mapping", "-am: built-in MindSpore->PyTorch API names; optional yaml",
         Flag::kOptionalString, &mapping_.api_mapping},
        {"-lm,--layer-mapping", "-lm: pair by layer scope; optional yaml of scope renames",
         Flag::kOptionalString, &mapping_.layer_mapping},
        {"--shard",
         "K/N: build only shard K of N of the ranks (1-based) into "
         "<out>/shard-K-of-N/graph.vis.db; "
         "'auto' reads Slurm / MPI / torchrun variables; numprobe merge joins them",
         Flag::kString, &shard_},
    };
  }

  int run() override {
    graph::GraphRunOptions opt;
    if (!input_.empty()) {
      base::MappedFile f(input_);
      CompareInput in = parse_compare_input(std::string_view(f.data(), f.size()), input_, true);
      if (target_.empty()) target_ = in.target;
      if (golden_.empty()) golden_ = in.golden;
      mapping_.fill_unset_from(in.mappings);
      if (in.parallel_merge) {
        opt.notes.push_back(
            "parallel_merge (msprobe's TP/PP/VPP shard merge) is not supported: each rank is its "
            "own graph");
        fprintf(stderr,
                "numprobe graph: %s: parallel_merge is not supported; graphing each rank "
                "on its own\n",
                input_.c_str());
      }
    }
    if (target_.empty()) throw Error("give -t <target> [-g <golden>], or -i compare.json");
    const CompareMappings mappings = load_compare_mappings(mapping_);
    if (mappings.any() && golden_.empty()) throw Error("mappings need a golden dump (-g)");
    opt.target = target_;
    opt.golden = golden_;
    opt.out = out_;
    opt.mappings = mappings.any() ? &mappings : nullptr;
    ShardSpec spec;
    if (!shard_.empty()) {
      spec = resolve_shard(shard_);
      opt.shard = &spec;
      printf("numprobe graph: shard %d/%d (%s)\n", spec.index, spec.count, spec.source.c_str());
    }
    const graph::GraphRunResult res = graph::run_graph(opt);
    printf("numprobe graph: %zu graph(s), %zu nodes -> %s (%.2f s %s, %.2f s writing)\n",
           res.graphs, res.nodes, res.path.c_str(), res.compare_s,
           golden_.empty() ? "reading" : "comparing", res.write_s);
    for (const std::string& n : res.notes) printf("  note: %s\n", n.c_str());
    for (const PairResult& p : res.report.pairs) {
      if (p.first_divergence) {
        printf("  step %lld rank %lld: first divergence %s (%s)\n",
               static_cast<long long>(p.target_where.step < 0 ? 0 : p.target_where.step),
               static_cast<long long>(p.target_where.rank < 0 ? 0 : p.target_where.rank),
               p.first_divergence->entry.c_str(), p.first_divergence->reason.c_str());
      }
    }
    printf("view it: numprobe serve %s\n", res.path.c_str());
    if (!golden_.empty() && !res.report.pairs.empty() &&
        report_coverage(res.report) == Coverage::kNothingCompared) {
      fprintf(stderr,
              "numprobe graph: nothing compared: no row of the target pairs with a row of "
              "the golden (every node is grey)\n");
      return 1;
    }
    return 0;
  }

 private:
  std::string target_, golden_, input_, out_, shard_;
  MappingOptions mapping_;
};

}  // namespace

std::unique_ptr<Subcommand> make_graph_command() {
  return std::make_unique<GraphCommand>();
}

}  // namespace numprobe::cli
