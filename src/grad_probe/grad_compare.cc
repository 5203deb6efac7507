#include "grad_probe/grad_compare.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "base/csv.h"
#include "base/file_util.h"
#include "base/json_writer.h"
#include "core/npy.h"
#include "grad_probe/grad_run.h"
#include "grad_probe/grad_summary.h"
#include "monitor/py_text.h"
#include "numprobe/error.h"

namespace numprobe::grad_probe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Agreement {
  uint64_t same = 0, total = 0;
};

NpyFile open_direction(const std::string& path) {
  NpyFile f = NpyFile::open(path);
  if (f.header().dtype != DType::kBool)
    throw InputError(path,
                     "direction file holds " + f.header().descr + ", not a numpy bool array (|b1)");
  return f;
}

Agreement agree(const std::string& p1, const std::string& p2) {
  NpyFile a = open_direction(p1), b = open_direction(p2);
  if (a.header().shape != b.header().shape)
    throw InputError(p2, "shape differs from " + p1 + ": the runs' parameters are not the same");
  const auto* x = static_cast<const uint8_t*>(a.data());
  const auto* y = static_cast<const uint8_t*>(b.data());
  Agreement g;
  g.total = a.header().element_count;
  for (uint64_t i = 0; i < g.total; ++i) g.same += (x[i] != 0) == (y[i] != 0);
  return g;
}

// The parameter order of a step: run1's summary, else run2's, else the direction files by name.
std::vector<std::string> step_order(const RankDir* d1, const RankDir* d2, int64_t step,
                                    const std::map<std::string, std::string>& f1,
                                    const std::map<std::string, std::string>& f2) {
  for (const RankDir* d : {d1, d2}) {
    auto it = d->summaries.find(step);
    if (it != d->summaries.end()) return read_grad_summary(it->second).params;
  }
  std::set<std::string> names;
  for (const auto& m : {f1, f2})
    for (const auto& kv : m) names.insert(kv.first);
  return {names.begin(), names.end()};
}

void compare_rank(int64_t rank, const RankDir& d1, const RankDir& d2, GradCompareResult& res) {
  RankCompare rc;
  rc.rank = rank;
  std::set<int64_t> steps;
  for (const RankDir* d : {&d1, &d2}) {
    for (const auto& kv : d->summaries) steps.insert(kv.first);
    for (const auto& kv : d->step_dirs) steps.insert(kv.first);
  }
  std::map<std::string, size_t> index;  // parameter -> rc.params position
  for (int64_t s : steps) {
    const bool in1 = d1.step_dirs.count(s), in2 = d2.step_dirs.count(s);
    if (!in1 || !in2) {
      std::string what;
      for (int k = 0; k < 2; ++k) {
        const RankDir& d = k == 0 ? d1 : d2;
        if (d.step_dirs.count(s)) continue;
        if (!what.empty()) what += "; ";
        what +=
            std::string(k == 0 ? "run1" : "run2") +
            (d.summaries.count(s) ? " has grad_summary_" + std::to_string(s) + ".csv but no step" +
                                        std::to_string(s) + " direction directory"
                                  : " has no step " + std::to_string(s));
      }
      res.gaps.push_back({rank, s, "", what});
      continue;
    }
    // The writer renames a step's summary into place after its direction files: a step folder
    // without it is a step cut short (a killed run), not one to compare.
    if (!d1.summaries.count(s) || !d2.summaries.count(s)) {
      res.gaps.push_back({rank, s, "",
                          std::string(d1.summaries.count(s) ? "run2" : "run1") + " has step" +
                              std::to_string(s) + "/ but no grad_summary_" + std::to_string(s) +
                              ".csv (an interrupted step?)"});
      continue;
    }
    const auto f1 = list_direction_files(d1.step_dirs.at(s));
    const auto f2 = list_direction_files(d2.step_dirs.at(s));
    const size_t col = rc.steps.size();
    rc.steps.push_back(s);
    for (auto& p : rc.params) p.similarity.push_back(kNaN);
    Agreement all;
    for (const std::string& name : step_order(&d1, &d2, s, f1, f2)) {
      auto [it, fresh] = index.emplace(name, rc.params.size());
      if (fresh) {
        rc.params.push_back({name, std::vector<double>(col + 1, kNaN), 0});
      }
      ParamSeries& ps = rc.params[it->second];
      auto a = f1.find(name), b = f2.find(name);
      if (a == f1.end() || b == f2.end()) {
        std::string what = std::string("no direction file ") + name + ".npy in " +
                           (a == f1.end() && b == f2.end() ? "either run"
                            : a == f1.end()                ? "run1"
                                                           : "run2");
        res.gaps.push_back({rank, s, name, what});
        continue;
      }
      const Agreement g = agree(a->second, b->second);
      all.same += g.same;
      all.total += g.total;
      ps.numel = g.total;
      // msprobe writes 0 for an empty gradient.
      ps.similarity[col] = g.total == 0 ? 0.0 : double(g.same) / double(g.total);
    }
    rc.summary.push_back(all.total == 0 ? 0.0 : double(all.same) / double(all.total));
  }
  res.ranks.push_back(std::move(rc));
}

void find_first(GradCompareResult& res) {
  const auto& o = res.options;
  for (const RankCompare& rc : res.ranks) {
    for (size_t c = 0; c < rc.steps.size(); ++c) {
      std::optional<Disagreement> here;
      for (const ParamSeries& p : rc.params) {
        const double v = p.similarity[c];
        if (std::isnan(v) || p.numel == 0) continue;  // a gap, or an empty gradient
        double prev = kNaN;
        for (size_t k = c; k-- > 0;)
          if (!std::isnan(p.similarity[k])) {
            prev = p.similarity[k];
            break;
          }
        const char* rule = v < o.threshold                          ? "below_threshold"
                           : !std::isnan(prev) && prev - v > o.drop ? "drop"
                                                                    : nullptr;
        if (rule == nullptr) continue;
        if (!here)
          here = Disagreement{rc.rank, rc.steps[c], p.name, v, rule, {}};
        else
          here->also_at_step.push_back(p.name);
      }
      if (!here) continue;
      if (!res.first || here->step < res.first->step) res.first = std::move(here);
      break;  // later steps of this rank cannot be earlier
    }
  }
}

}  // namespace

GradCompareResult compare_grad_runs(const std::string& run1, const std::string& run2,
                                    const GradCompareOptions& opt) {
  GradCompareResult res;
  res.run1 = run1;
  res.run2 = run2;
  res.options = opt;
  const auto r1 = list_run(run1), r2 = list_run(run2);
  std::set<int64_t> ranks;
  for (const auto& kv : r1) ranks.insert(kv.first);
  for (const auto& kv : r2) ranks.insert(kv.first);
  for (int64_t r : ranks) {
    auto a = r1.find(r), b = r2.find(r);
    if (a == r1.end() || b == r2.end()) {
      res.gaps.push_back({r, -1, "",
                          std::string("rank") + std::to_string(r) + " only in " +
                              (a == r1.end() ? "run2" : "run1")});
      continue;
    }
    compare_rank(r, a->second, b->second, res);
  }
  size_t compared = 0;
  for (const auto& rc : res.ranks) compared += rc.steps.size();
  if (compared == 0)
    throw Error("grad-compare: " + run1 + " and " + run2 +
                " share no step with direction files (step{N}/ folders; grad_level L0 writes "
                "none): nothing to compare");
  find_first(res);
  return res;
}

std::string write_grad_compare(const GradCompareResult& r, const std::string& out_dir) {
  base::make_dirs(out_dir);
  std::string text;
  base::JsonWriter j(text, base::JsonDialect::python(1));
  auto number = [&](double v) { std::isnan(v) ? j.null_value() : j.float_value(v); };
  auto string_field = [&](const char* k, const std::string& v) {
    j.key(k);
    j.string_value(v);
  };
  j.begin_object();
  string_field("run1", r.run1);
  string_field("run2", r.run2);
  j.key("threshold");
  j.float_value(r.options.threshold);
  j.key("drop");
  j.float_value(r.options.drop);
  j.key("first_disagreement");
  if (r.first) {
    j.begin_object();
    j.key("step");
    j.int_value(r.first->step);
    string_field("parameter", r.first->parameter);
    j.key("similarity");
    j.float_value(r.first->similarity);
    j.key("rank");
    j.int_value(r.first->rank);
    string_field("rule", r.first->rule);
    j.key("also_at_step");
    j.begin_array();
    for (const auto& p : r.first->also_at_step) j.string_value(p);
    j.end_array();
    j.end_object();
  } else {
    j.null_value();
  }
  j.key("gaps");
  j.begin_array();
  for (const auto& g : r.gaps) {
    j.begin_object();
    j.key("rank");
    j.int_value(g.rank);
    j.key("step");
    if (g.step < 0)
      j.null_value();
    else
      j.int_value(g.step);
    string_field("parameter", g.parameter);
    string_field("what", g.what);
    j.end_object();
  }
  j.end_array();
  j.key("ranks");
  j.begin_array();
  for (const auto& rc : r.ranks) {
    j.begin_object();
    j.key("rank");
    j.int_value(rc.rank);
    j.key("steps");
    j.begin_array();
    for (int64_t s : rc.steps) j.int_value(s);
    j.end_array();
    j.key("summary");
    j.begin_array();
    for (double v : rc.summary) number(v);
    j.end_array();
    j.key("parameters");
    j.begin_array();
    for (const auto& p : rc.params) {
      j.begin_object();
      string_field("name", p.name);
      j.key("numel");
      j.int_value(static_cast<int64_t>(p.numel));
      j.key("similarity");
      j.begin_array();
      for (double v : p.similarity) number(v);
      j.end_array();
      j.end_object();
    }
    j.end_array();
    j.end_object();

    // msprobe's similarities.csv: a "step" row, one row per parameter, then "summary". A gap is
    // an empty cell (msprobe stops with an error instead).
    std::string csv;
    std::string line;
    csv_append_cell(line, "step");
    for (int64_t s : rc.steps) csv_append_cell(line, std::to_string(s));
    csv += line + "\r\n";
    auto row = [&](const std::string& name, const std::vector<double>& v) {
      line.clear();
      csv_append_cell(line, name);
      for (double x : v) csv_append_cell(line, std::isnan(x) ? "" : monitor::py_float_str(x));
      csv += line + "\r\n";
    };
    for (const auto& p : rc.params) row(p.name, p.similarity);
    row("summary", rc.summary);
    const std::string dir = out_dir + "/rank" + std::to_string(rc.rank);
    base::make_dirs(dir);
    base::write_file_atomic(dir + "/similarities.csv", std::string(kUtf8Bom) + csv);
  }
  j.end_array();
  j.end_object();
  const std::string path = out_dir + "/grad_compare.json";
  base::write_file_atomic(path, text + "\n");
  base::write_file_atomic(out_dir + "/grad_compare.html", render_grad_compare_html(r));
  return path;
}

}  // namespace numprobe::grad_probe
