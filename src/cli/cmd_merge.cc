// numprobe merge <shard outputs...> -o <out>: the summary.json of a compare run as shards.
#include <chrono>
#include <cstdio>

#include "base/file_util.h"
#include "cli/merge_report.h"
#include "cli/subcommand.h"
#include "graph/vis_db_merge.h"

namespace numprobe::cli {
namespace {

class MergeCommand : public Subcommand {
 public:
  const char* name() const override { return "merge"; }
  const char* summary() const override {
    return "Merge the outputs of compare/graph run as shards (--shard) into one summary.json / "
           "graph.vis.db";
  }
  std::vector<Flag> flags() override {
    return {
        {"shards",
         "shard outputs: summary.json / graph.vis.db files, shard-K-of-N directories, or "
         "directories holding them",
         Flag::kStrings, &inputs_, true},
        {"-o,--out", "output directory (created); summary.json is written there", Flag::kString,
         &out_, true},
    };
  }
  int run() override {
    const auto t0 = std::chrono::steady_clock::now();
    const ShardOutputs in = collect_shard_outputs(inputs_);
    int rc = 0;
    if (!in.summaries.empty()) {
      const MergeResult r = merge_shard_summaries(in.summaries);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rc = write_merged_summary(r, out_, secs);
    }
    if (!in.graphs.empty()) {
      const auto t1 = std::chrono::steady_clock::now();
      base::make_dirs(out_);
      const graph::VisDbMergeResult g = graph::merge_vis_dbs(in.graphs, out_ + "/graph.vis.db");
      printf("merged %zu graph shard%s of %d: %lld nodes -> %s in %.3f s\n", g.present.size(),
             g.present.size() == 1 ? "" : "s", g.count, g.nodes, g.path.c_str(),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
      for (const std::string& m : g.missing_ranks) {
        fprintf(stderr, "numprobe merge: not in the graph: %s (its shard wrote no graph)\n",
                m.c_str());
        rc = 1;
      }
      printf("view it: numprobe serve %s\n", g.path.c_str());
    }
    return rc;
  }

 private:
  std::vector<std::string> inputs_;
  std::string out_;
};

}  // namespace

std::unique_ptr<Subcommand> make_merge_command() {
  return std::make_unique<MergeCommand>();
}

}  // namespace numprobe::cli
