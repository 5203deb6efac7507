#include "cli/merge_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "numprobe/error.h"

namespace fs = std::filesystem;

namespace numprobe::cli {

ShardSpec resolve_shard(const std::string& value) {
  if (value != "auto") return parse_shard_spec(value);
  auto s = shard_from_environment([](const char* v) { return std::getenv(v); });
  if (!s)
    throw Error(
        "--shard auto: none of SLURM_ARRAY_TASK_ID/COUNT, SLURM_PROCID/NTASKS, "
        "OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, RANK/WORLD_SIZE is set: give --shard K/N");
  return *s;
}

ShardSummaryFile read_shard_summary(const std::filesystem::path& p) {
  const base::MappedFile f(p.string());
  return {p.string(), std::string(f.data(), f.size())};
}

namespace {

bool is_shard_dir_name(const std::string& name) {
  int k = 0, n = 0;
  char tail = 0;
  return std::sscanf(name.c_str(), "shard-%d-of-%d%c", &k, &n, &tail) == 2;
}

}  // namespace

ShardOutputs collect_shard_outputs(const std::vector<std::string>& inputs) {
  ShardOutputs out;
  auto take_dir = [&](const fs::path& d) {
    std::error_code ec;
    bool any = false;
    if (fs::is_regular_file(d / "summary.json", ec)) {
      out.summaries.push_back(read_shard_summary(d / "summary.json"));
      any = true;
    }
    if (fs::is_regular_file(d / "graph.vis.db", ec)) {
      out.graphs.push_back((d / "graph.vis.db").string());
      any = true;
    }
    return any;
  };
  for (const std::string& in : inputs) {
    const fs::path p(in);
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      const std::string name = p.filename().string();
      if (name.size() > 7 && name.compare(name.size() - 7, 7, ".vis.db") == 0) {
        out.graphs.push_back(p.string());
      } else {
        out.summaries.push_back(read_shard_summary(p));
      }
      continue;
    }
    if (!fs::is_directory(p, ec)) throw InputError(in, "no such file or directory");
    // Shard directories first: a merged summary.json may sit beside them (merge -o into the same
    // directory), and it is no shard's.
    std::vector<fs::path> shards;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (e.is_directory() && is_shard_dir_name(e.path().filename().string()))
        shards.push_back(e.path());
    }
    if (ec) throw InputError(in, "cannot be listed: " + ec.message());
    if (shards.empty()) {
      if (!take_dir(p))
        throw InputError(in, "holds no summary.json, graph.vis.db or shard-K-of-N directory");
      continue;
    }
    std::sort(shards.begin(), shards.end());
    bool any = false;
    for (const fs::path& s : shards) any = take_dir(s) || any;
    // Directories without their files are shards that failed or still run: the merges name them.
    if (!any) throw InputError(in, "no shard under it has written its summary.json or graph yet");
  }
  return out;
}

int write_merged_summary(const MergeResult& r, const std::string& out, double secs) {
  fs::create_directories(out);
  base::write_file_atomic(out + "/summary.json", r.summary_json);
  printf("merged %zu shard%s of %d: %zu of %zu (step, rank) pairs, coverage %s\n", r.present.size(),
         r.present.size() == 1 ? "" : "s", r.count, r.pairs, r.pairs_total,
         coverage_name(r.coverage));
  for (const MergedOrigin& o : r.origins) {
    printf("origin across ranks, step %lld: %s on rank %lld (%s; %zu collective%s before it",
           static_cast<long long>(o.step), o.entry.c_str(), static_cast<long long>(o.rank),
           o.reason.c_str(), o.collectives_before, o.collectives_before == 1 ? "" : "s");
    if (!o.received_by.empty())
      printf("; received through a collective by %zu rank%s", o.received_by.size(),
             o.received_by.size() == 1 ? "" : "s");
    printf(")\n");
  }
  // The pairs that diverged on their own (not in a collective): the ones worth reading first.
  size_t received = 0, shown = 0;
  for (const PairDivergence& d : r.divergences) {
    if (d.entry.rfind("Distributed.", 0) == 0) {
      ++received;
      continue;
    }
    if (++shown > 8) continue;
    printf("  step %lld rank %lld: first divergence %s (%s)\n", static_cast<long long>(d.step),
           static_cast<long long>(d.rank), d.entry.c_str(), d.reason.c_str());
  }
  if (shown > 8) printf("  ... %zu more (summary.json)\n", shown - 8);
  if (received)
    printf("  %zu pair%s first diverged in a collective (summary.json)\n", received,
           received == 1 ? "" : "s");
  if (r.divergences.empty() && r.coverage != Coverage::kNothingCompared)
    printf("  no divergence beyond noise in the merged pairs\n");
  printf("wrote %s/summary.json in %.3f s\n", out.c_str(), secs);
  int rc = 0;
  for (const std::string& m : r.missing_ranks) {
    fprintf(stderr, "numprobe merge: not compared: %s (its shard wrote no summary)\n", m.c_str());
    rc = 1;
  }
  if (r.coverage == Coverage::kNothingCompared) {
    fprintf(stderr, "numprobe merge: nothing compared\n");
    rc = 1;
  }
  return rc;
}

}  // namespace numprobe::cli
