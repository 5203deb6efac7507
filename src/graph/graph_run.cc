#include "graph/graph_run.h"

#if defined(__linux__)
#include <malloc.h>  // malloc_trim
#endif

#include <chrono>
#include <cmath>
#include <ctime>
#include <set>

#include "base/file_util.h"
#include "base/json_text.h"
#include "graph/graph_pair.h"
#include "graph/vis_db_merge.h"
#include "graph/vis_db_writer.h"
#include "numprobe/dump_tree.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

int64_t or_zero(int64_t v) {
  return v < 0 ? 0 : v;
}

std::string out_path(const std::string& out, bool compare) {
  const std::string suffix = ".vis.db";
  if (out.size() > suffix.size() &&
      out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0) {
    const size_t slash = out.rfind('/');
    if (slash != std::string::npos && slash > 0) base::make_dirs(out.substr(0, slash));
    return out;
  }
  base::make_dirs(out);
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  return out + "/" + (compare ? "compare_" : "build_") + stamp + suffix;
}

void finding(std::string& out, const PairResult& p, const FirstDivergence& f) {
  const std::string_view side = [&] {
    for (size_t i = 0; i < p.target.dump.entries.size(); ++i)
      if (p.target.dump.entry_name(i) == f.entry) return "target";
    return "golden";
  }();
  auto str = [&](const char* k, std::string_view v) {
    out += '"';
    out += k;
    out += "\": ";
    base::append_py_string(out, v);
    out += ", ";
  };
  auto num = [&](const char* k, double v) {
    out += '"';
    out += k;
    out += "\": ";
    if (std::isfinite(v)) {
      base::append_py_float(out, v);
    } else {
      out += "null";
    }
  };
  out += '{';
  str("node", f.entry);
  str("side", side);
  str("row", f.row);
  str("reason", f.reason);
  str("direction", f.direction);
  str("module", f.module);
  num("score", f.score);
  out += ", ";
  num("input_discrepancy", f.input_discrepancy);
  out += ", ";
  num("output_discrepancy", f.output_discrepancy);
  out += ", ";
  num("tolerance", f.tolerance);
  out += '}';
}

// numprobe_meta "findings" of a compare (docs/graph.md).
std::string findings_json(const CompareReport& rep) {
  std::string out = "{";
  std::set<std::string> seen;
  for (const PairResult& p : rep.pairs) {
    std::string key = std::to_string(or_zero(p.target_where.step)) + "/" +
                      std::to_string(or_zero(p.target_where.rank));
    if (!seen.insert(key).second) continue;
    if (out.size() > 1) out += ", ";
    base::append_py_string(out, key);
    out += ": {\"first_divergence\": ";
    if (p.suspects.empty()) {
      out += "null";
    } else {
      finding(out, p, p.suspects.front());
    }
    out += ", \"suspects\": [";
    for (size_t i = 0; i < p.suspects.size(); ++i) {
      if (i) out += ", ";
      finding(out, p, p.suspects[i]);
    }
    out += "], \"coverage\": ";
    base::append_py_string(out, coverage_name(pair_coverage(p)));
    out += ", \"target_dir\": ";
    base::append_py_string(out, p.target_where.dir);
    out += ", \"golden_dir\": ";
    base::append_py_string(out, p.golden_where.dir);
    out += ", \"counts\": {\"pass\": " + std::to_string(p.pass) +
           ", \"warning\": " + std::to_string(p.warning) +
           ", \"error\": " + std::to_string(p.error) +
           ", \"unmatched_target\": " + std::to_string(p.unmatched_target) +
           ", \"unmatched_golden\": " + std::to_string(p.unmatched_golden) + "}}";
  }
  return out + '}';
}

}  // namespace

GraphRunResult run_graph(const GraphRunOptions& opt) {
  GraphRunResult res;
  const bool compare = !opt.golden.empty();
  res.notes = opt.notes;
  std::vector<std::unique_ptr<GraphPair>> graphs;
  VisDbContent content;
  content.compare = compare;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> units;  // with a shard: every rank unit of the job
  if (compare) {
    if (opt.shard) {
      const ComparePlan plan = plan_compare(opt.target, opt.golden);
      units = plan_units(plan);
      res.report = compare_plan(plan, shard_pairs(plan, *opt.shard), opt.threads, opt.mappings);
    } else {
      res.report = compare_dumps(opt.target, opt.golden, opt.threads, opt.mappings);
    }
    for (const std::string& p : res.report.problems) res.notes.push_back(p);
    if (res.report.pairs.empty() && !opt.shard)
      throw Error("graph: no (step, rank) of " + opt.target + " pairs with one of " + opt.golden);
    if (!res.report.pairs.empty()) content.mode = res.report.pairs.front().mode;
    // The compare's construct.json lookups are over and the graph builds use only the names
    // (through each table's string pool): the edge maps go before the graphs take their memory.
    for (PairResult& p : res.report.pairs)
      for (RankDump* d : {&p.target, &p.golden})
        if (d->construct) std::unordered_map<uint32_t, uint32_t>().swap(d->construct->index);
    for (const PairResult& p : res.report.pairs) graphs.push_back(graph_pair(p));
    // ... and once they are built, the name lookups too (graph nodes keep pointing at the names).
    for (PairResult& p : res.report.pairs)
      for (RankDump* d : {&p.target, &p.golden})
        if (d->construct) d->construct->strings.release_index();
    content.findings_json = findings_json(res.report);
  } else {
    std::vector<RankLocation> where = find_rank_dumps(opt.target);
    if (opt.shard) {
      ComparePlan plan;  // the rank units of the dumps, as a compare plan would list them
      for (const RankLocation& w : where) plan.pairs.emplace_back(w, w);
      units = plan_units(plan);
      std::vector<RankLocation> mine;
      for (size_t i : shard_pairs(plan, *opt.shard)) mine.push_back(where[i]);
      where.swap(mine);
    }
    for (const RankLocation& w : where) graphs.push_back(single_graph(w));
    if (!graphs.empty()) {
      const std::string_view task = graphs.front()->target.dump->dump.task();
      content.mode = task == "md5"      ? CompareMode::kMd5
                     : task == "tensor" ? CompareMode::kTensor
                                        : CompareMode::kStatistics;
    }
  }
  res.compare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::set<std::string> notes(res.notes.begin(), res.notes.end());
  for (const auto& g : graphs) {
    content.graphs.push_back(g.get());
    res.nodes += g->target.graph.nodes.size() + (g->golden ? g->golden->graph.nodes.size() : 0);
    for (const SideGraph* s : {&g->target, g->golden ? &*g->golden : nullptr}) {
      if (!s) continue;
      for (const std::string& n : s->graph.notes) {
        if (notes.insert(n).second) res.notes.push_back(n);
      }
    }
  }
  res.graphs = graphs.size();
  content.notes = res.notes;
  if (opt.shard) {
    const std::string dir = opt.out + "/" + shard_dir_name(opt.shard->index, opt.shard->count);
    base::make_dirs(dir);
    res.path = dir + "/graph.vis.db";
    content.shard_json = shard_meta_json(opt.shard->index, opt.shard->count, units);
  } else {
    res.path = out_path(opt.out, compare);
  }
#ifdef __GLIBC__
  // The compare and the graph builds freed hundreds of MB (flattening buffers, the name maps) that
  // glibc keeps in its heap; handing them back before SQLite's writing lowers the run's peak RSS.
  malloc_trim(0);
#endif
  auto t1 = std::chrono::steady_clock::now();
  write_vis_db(res.path, content);
  res.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return res;
}

}  // namespace numprobe::graph
