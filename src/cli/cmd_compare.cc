// numprobe compare -t <target> -g <golden> -o <out>: compare two runs, name the first divergence.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "cli/merge_report.h"
#include "cli/subcommand.h"
#include "compare/compare_xlsx.h"
#include "numprobe/compare.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/compare/shard.h"
#include "numprobe/error.h"

namespace fs = std::filesystem;

namespace numprobe::cli {
namespace {

std::string label(const RankLocation& l) {
  std::string s = "step";
  s += l.step >= 0 ? std::to_string(l.step) : "0";
  s += "_";
  s += l.rank >= 0 ? "rank" + std::to_string(l.rank)
                   : (l.rank_label.empty() ? "rank" : l.rank_label);
  return s;
}

class CompareCommand : public Subcommand {
 public:
  const char* name() const override { return "compare"; }
  const char* summary() const override {
    return "Compare a target run with a golden run: msprobe's metrics per row, first divergence";
  }
  std::vector<Flag> flags() override {
    return {
        {"-t,--target", "dump of the run that misbehaves (file, rank/step dir or root)",
         Flag::kString, &target_},
        {"-g,--golden", "dump of the benchmark run", Flag::kString, &golden_},
        {"-i,--input", "msprobe compare.json (npu_path, bench_path, stack_path)", Flag::kString,
         &input_},
        {"-o,--out", "output directory (created)", Flag::kString, &out_, true},
        {"-s,--stack", "add the target's call stack to each row", Flag::kBool, &stack_},
        {"--xlsx", "also write each table as .xlsx, rows highlighted as msprobe does", Flag::kBool,
         &xlsx_},
        {"-dm,--data-mapping", "-dm: yaml 'target row: golden row' pairs (msprobe data_mapping)",
         Flag::kString, &mapping_.data_mapping},
        {"-cm,--cell-mapping",
         "-cm: compare Cell.* as Module.*; optional yaml 'cell_path.Class: module_path.Class'",
         Flag::kOptionalString, &mapping_.cell_mapping},
        {"-am,--api-mapping",
         "-am: built-in MindSpore->PyTorch API names; optional yaml list of argument mappings",
         Flag::kOptionalString, &mapping_.api_mapping},
        {"-lm,--layer-mapping",
         "-lm: pair by layer scope (construct.json/stack.json); optional yaml of scope renames",
         Flag::kOptionalString, &mapping_.layer_mapping},
        {"--shard",
         "K/N: compare only shard K of N of the ranks (1-based), into <out>/shard-K-of-N; 'auto' "
         "reads Slurm / MPI / torchrun variables (docs/scale.md)",
         Flag::kString, &shard_},
        {"--merge",
         "with --shard: shard 1 waits for the other shards' summaries under <out> and merges them "
         "into <out>/summary.json",
         Flag::kBool, &merge_},
        {"--merge-timeout", "seconds shard 1 waits for the others with --merge (default 3600)",
         Flag::kInt, &merge_timeout_},
        {"--prior-steps",
         "when the first dumped step is not step 0: 'unknown' (default: the runs may have drifted "
         "in the steps before) or 'bitwise' (they agreed bit for bit: parameters must too)",
         Flag::kString, &prior_},
    };
  }

  // --prior-steps: applied to a report compare_dumps/compare_plan made (which assume kUnknown).
  void apply_prior_steps(CompareReport& rep) const {
    if (prior_ == "bitwise") judge_first_steps(rep, PriorSteps::kBitwise);
  }

  int run() override {
    if (!input_.empty()) read_input_json();
    if (target_.empty() || golden_.empty()) {
      throw Error("give -t <target> and -g <golden>, or -i compare.json");
    }
    if (merge_ && shard_.empty()) throw Error("--merge goes with --shard");
    if (prior_ != "unknown" && prior_ != "bitwise")
      throw Error("--prior-steps takes 'unknown' or 'bitwise', not '" + prior_ + "'");
    auto t0 = std::chrono::steady_clock::now();
    const CompareMappings mappings = load_compare_mappings(mapping_);
    if (!shard_.empty()) return run_shard(mappings.any() ? &mappings : nullptr);
    CompareReport rep = compare_dumps(target_, golden_, 0, mappings.any() ? &mappings : nullptr);
    apply_prior_steps(rep);
    write_tables(rep, out_, mappings.layer);
    base::write_file_atomic(out_ + "/summary.json", render_summary_json(rep));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report(rep, secs, out_, true);
    if (report_coverage(rep) == Coverage::kNothingCompared) {
      // Written files say so too (summary.json "coverage"); a script must not read this as clean.
      fprintf(stderr, "numprobe compare: nothing compared: %s\n",
              rep.pairs.empty() ? "no step/rank of the target pairs with one of the golden"
                                : "no row of the target pairs with a row of the golden");
      return 1;
    }
    return 0;
  }

 private:
  // One shard of the ranks (shard.h): its tables and its summary under <out>/shard-K-of-N.
  int run_shard(const CompareMappings* mappings) {
    const ShardSpec spec = resolve_shard(shard_);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string dir = out_ + "/" + shard_dir_name(spec.index, spec.count);
    // A rerun that fails must not leave the previous run's summary to be merged.
    fs::remove(dir + "/summary.json");
    const ComparePlan plan = plan_compare(target_, golden_);
    ShardInfo info{spec,
                   target_,
                   golden_,
                   plan_units(plan),
                   plan.pairs.size(),
                   plan.problems.size(),
                   shard_pairs(plan, spec)};
    const auto [first, end] = shard_unit_range(info.units.size(), spec.index, spec.count);
    printf("shard %d/%d (%s): %s of %zu, %zu (step, rank) pair%s\n", spec.index, spec.count,
           spec.source.c_str(), describe_units(info.units, first, end).c_str(), info.units.size(),
           info.pair_index.size(), info.pair_index.size() == 1 ? "" : "s");
    CompareReport rep = compare_plan(plan, info.pair_index, 0, mappings);
    apply_prior_steps(rep);
    write_tables(rep, dir, mappings && mappings->layer);
    base::write_file_atomic(dir + "/summary.json", render_shard_summary_json(rep, info));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report(rep, secs, dir, false);
    int rc = 0;
    if (!rep.pairs.empty() && report_coverage(rep) == Coverage::kNothingCompared) {
      fprintf(stderr, "numprobe compare: shard %d/%d: nothing compared\n", spec.index, spec.count);
      rc = 1;
    }
    if (merge_ && spec.index == 1) {
      const int m = merge_when_done(spec);
      if (rc == 0) rc = m;
    }
    return rc;
  }

  // Shard 1 with --merge: waits until every shard of this run has written its summary (or the
  // timeout passes: the merge then reports the missing ones), and merges them into <out>.
  int merge_when_done(const ShardSpec& spec) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + std::chrono::seconds(merge_timeout_);
    std::vector<std::optional<ShardSummaryFile>> got(static_cast<size_t>(spec.count));
    for (;;) {
      size_t have = 0;
      for (int k = 1; k <= spec.count; ++k) {
        auto& slot = got[static_cast<size_t>(k - 1)];
        const fs::path p = fs::path(out_) / shard_dir_name(k, spec.count) / "summary.json";
        std::error_code ec;
        if (!slot && fs::is_regular_file(p, ec)) {
          ShardSummaryFile f = read_shard_summary(p);
          // An earlier run's summary (another job id) is not this run's: wait for the new one.
          if (spec.run.empty() || read_shard_spec(f).run == spec.run) slot = std::move(f);
        }
        have += slot.has_value();
      }
      const bool late = std::chrono::steady_clock::now() >= deadline;
      if (have == got.size() || late) {
        if (late)
          fprintf(stderr, "numprobe compare: --merge: %zu of %d shards after %lld s\n", have,
                  spec.count, static_cast<long long>(merge_timeout_));
        std::vector<ShardSummaryFile> files;
        for (auto& f : got)
          if (f) files.push_back(std::move(*f));
        const MergeResult r = merge_shard_summaries(files);
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return write_merged_summary(r, out_, secs);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  void write_tables(const CompareReport& rep, const std::string& dir, bool layer_mapping) {
    fs::create_directories(dir);
    for (const PairResult& p : rep.pairs) {
      std::string path = dir + "/compare_result_" + label(p.target_where);
      write_compare_csv(path + ".csv", p, stack_);
      if (xlsx_) write_compare_xlsx(path + ".xlsx", p, stack_);
      if (layer_mapping) {
        // What msprobe writes for -lm, so that its compare can rerun the pairing with -dm.
        const std::string l = label(p.target_where);
        base::write_file_atomic(dir + "/api_mapping_" + l + ".yaml",
                                render_mapping_yaml(p.generated_mappings.api));
        base::write_file_atomic(dir + "/data_mapping_" + l + ".yaml",
                                render_mapping_yaml(p.generated_mappings.data));
      }
    }
  }

  // The two innermost frames outside the dump tool itself (msprobe's hook frames come first).
  static void print_user_frames(const StackTable& st, const std::string& entry) {
    const auto* frames = st.frames_of(entry);
    if (!frames) return;
    int shown = 0;
    for (uint32_t id : *frames) {
      std::string f(st.strings.get(id));
      if (f.find("/msprobe/") != std::string::npos || f.find("/numprobe/") != std::string::npos) {
        continue;
      }
      for (char& c : f) {
        if (c == '\n') c = ' ';
      }
      printf("    at %s\n", f.c_str());
      if (++shown == 2) break;
    }
  }

  void read_input_json() {
    base::MappedFile f(input_);
    CompareInput in = parse_compare_input(std::string_view(f.data(), f.size()), input_);
    if (in.parallel_merge)
      throw InputError(input_, "parallel_merge (msprobe graph's shard merge) is not supported");
    target_ = in.target;
    golden_ = in.golden;
    stack_ = stack_ || in.stack;
    // Command-line mapping options win over the file's.
    mapping_.fill_unset_from(in.mappings);
  }

  // `origins`: false for a shard, whose ranks are only some of the job's (merge orders them all).
  void report(const CompareReport& rep, double secs, const std::string& dir, bool origins) {
    for (const PairResult& p : rep.pairs) {
      printf(
          "%s (%s mode): %zu rows · %zu matched · %zu pass · %zu warning · %zu error · "
          "%zu target-only · %zu golden-only\n",
          label(p.target_where).c_str(), compare_mode_name(p.mode), p.rows.size(), p.matched,
          p.pass, p.warning, p.error, p.unmatched_target, p.unmatched_golden);
      if (!p.first_divergence) {
        switch (pair_coverage(p)) {
          case Coverage::kNothingCompared:
            printf("  nothing compared: no row paired\n");
            break;
          case Coverage::kMostlyUnmatched:
            printf(
                "  no divergence among the %zu paired rows, but %zu rows found no partner: "
                "most of the two runs was not compared\n",
                p.matched, p.unmatched_target + p.unmatched_golden);
            break;
          case Coverage::kCompared:
            printf("  no divergence beyond noise (regime: %s)\n", p.regime.c_str());
            break;
        }
        continue;
      }
      const FirstDivergence& f = *p.first_divergence;
      printf("  first divergence: %s (%s%s%s; regime %s)\n    row %s\n", f.entry.c_str(),
             f.reason.c_str(), f.source.empty() ? "" : ": ", f.source.c_str(), p.regime.c_str(),
             f.row.c_str());
      if (p.suspects.size() > 1) {
        printf("    next suspects:");
        for (size_t i = 1; i < p.suspects.size() && i < 3; ++i)
          printf(" %s (%s)", p.suspects[i].entry.c_str(), p.suspects[i].reason.c_str());
        printf("\n");
      }
      if (!f.module.empty()) printf("    in %s\n", f.module.c_str());
      if (p.target.stack) print_user_frames(*p.target.stack, f.entry);
    }
    for (const CrossRankOrigin& o : rep.origins) {
      if (!origins) break;
      size_t ranks = 0;
      for (const PairResult& p : rep.pairs) ranks += p.target_where.step == o.step;
      if (ranks < 2 || o.pair < 0) continue;
      const PairResult& p = rep.pairs[static_cast<size_t>(o.pair)];
      printf("origin across ranks, step %lld: %s on %s (%s; %zu collective%s before it",
             static_cast<long long>(o.step), p.first_divergence->entry.c_str(),
             p.target_where.rank >= 0 ? ("rank " + std::to_string(p.target_where.rank)).c_str()
                                      : label(p.target_where).c_str(),
             o.collective_itself ? "the collective itself diverged" : "diverged locally",
             o.collectives_before, o.collectives_before == 1 ? "" : "s");
      if (!o.received.empty()) {
        printf("; received by rank");
        for (int64_t i : o.received)
          printf(" %lld",
                 static_cast<long long>(rep.pairs[static_cast<size_t>(i)].target_where.rank));
      }
      printf(")\n");
    }
    for (const auto& s : rep.problems) printf("warning: %s\n", s.c_str());
    if (stack_) {
      for (const PairResult& p : rep.pairs) {
        if (!p.target.stack)
          printf("warning: -s: %s has no readable stack.json, its NPU_Stack_Info is N/A\n",
                 p.target_where.dir.c_str());
      }
    }
    printf("wrote %s/summary.json and %zu csv%s file(s) in %.3f s\n", dir.c_str(), rep.pairs.size(),
           xlsx_ ? " + xlsx" : "", secs);
  }

  std::string target_, golden_, input_, out_, shard_;
  std::string prior_ = "unknown";
  bool stack_ = false, xlsx_ = false, merge_ = false;
  int64_t merge_timeout_ = 3600;
  MappingOptions mapping_;
};

}  // namespace

std::unique_ptr<Subcommand> make_compare_command() {
  return std::make_unique<CompareCommand>();
}

}  // namespace numprobe::cli
