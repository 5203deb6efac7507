// numprobe info <dump>: what a dump holds and what is wrong with it.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/json_writer.h"
#include "cli/progress.h"
#include "cli/subcommand.h"
#include "format/dump_summary.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

uint64_t file_size(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

std::string rank_title(const RankLocation& w) {
  std::string t = w.step >= 0 ? "step " + std::to_string(w.step) : std::string("(no step)");
  t += " · ";
  t += w.rank_label.empty() ? std::string("(single file)") : w.rank_label;
  return t;
}

void print_text(const RankSummary& s, double seconds) {
  printf("%s  [%s]\n", rank_title(s.where).c_str(), s.where.dump_json.c_str());
  printf("  framework %s · task %s · level %s%s\n", s.framework.c_str(),
         s.task.empty() ? "?" : s.task.c_str(), s.level.empty() ? "?" : s.level.c_str(),
         s.recovered_from_journal ? " · recovered from journal" : "");
  printf("  entries %llu: forward %llu · backward %llu · parameters_grad %llu",
         (unsigned long long)s.entries, (unsigned long long)s.forward,
         (unsigned long long)s.backward, (unsigned long long)s.parameters_grad);
  if (s.debug) printf(" · debug %llu", (unsigned long long)s.debug);
  if (s.unnamed) printf(" · unrecognised %llu", (unsigned long long)s.unnamed);
  printf("  (read in %.3f s)\n", seconds);
  for (const PrefixCount& p : s.prefixes) {
    printf("    %-14s %6llu  (fwd %llu, bwd %llu", p.prefix.c_str(), (unsigned long long)p.total(),
           (unsigned long long)p.forward, (unsigned long long)p.backward);
    if (p.parameters_grad) printf(", param grads %llu", (unsigned long long)p.parameters_grad);
    if (p.other) printf(", other %llu", (unsigned long long)p.other);
    printf(")\n");
  }
  printf("  tensors %llu", (unsigned long long)s.tensors);
  if (s.tensors_with_md5) printf(" · with md5 %llu", (unsigned long long)s.tensors_with_md5);
  printf(" · with data files %llu", (unsigned long long)s.tensors_with_data);
  if (s.tensors_with_data) printf(" (%llu missing)", (unsigned long long)s.data_files_missing);
  printf("\n  non-finite statistics: %llu tensors", (unsigned long long)s.nonfinite_tensors);
  if (s.nonfinite_tensors) printf(" (first in %s)", s.first_nonfinite_entry.c_str());
  printf("\n  stack.json: %llu entries · construct.json: %llu nodes\n",
         (unsigned long long)s.stack_entries, (unsigned long long)s.construct_nodes);
  if (s.problems.empty()) {
    printf("  problems: none\n");
  } else {
    printf("  problems:\n");
    for (const auto& p : s.problems) printf("    - %s\n", p.c_str());
  }
}

void write_json(base::JsonWriter& w, const RankSummary& s) {
  auto u = [&](const char* k, uint64_t v) {
    w.key(k);
    w.int_value(static_cast<int64_t>(v));
  };
  auto str = [&](const char* k, const std::string& v) {
    w.key(k);
    w.string_value(v);
  };
  w.begin_object();
  w.key("step");
  w.int_value(s.where.step);
  w.key("rank");
  w.int_value(s.where.rank);
  str("rank_label", s.where.rank_label);
  str("path", s.where.dump_json);
  str("framework", s.framework);
  str("task", s.task);
  str("level", s.level);
  u("entries", s.entries);
  u("forward", s.forward);
  u("backward", s.backward);
  u("parameters_grad", s.parameters_grad);
  u("debug", s.debug);
  u("unrecognised", s.unnamed);
  w.key("prefixes");
  w.begin_object();
  for (const auto& p : s.prefixes) {
    w.key(p.prefix);
    w.begin_object();
    u("forward", p.forward);
    u("backward", p.backward);
    u("parameters_grad", p.parameters_grad);
    u("other", p.other);
    w.end_object();
  }
  w.end_object();
  u("tensors", s.tensors);
  u("tensors_with_md5", s.tensors_with_md5);
  u("tensors_with_data", s.tensors_with_data);
  u("data_files_missing", s.data_files_missing);
  u("nonfinite_tensors", s.nonfinite_tensors);
  str("first_nonfinite_entry", s.first_nonfinite_entry);
  u("stack_entries", s.stack_entries);
  u("construct_nodes", s.construct_nodes);
  w.key("recovered_from_journal");
  w.bool_value(s.recovered_from_journal);
  w.key("problems");
  w.begin_array();
  for (const auto& p : s.problems) w.string_value(p);
  w.end_array();
  w.end_object();
}

class InfoCommand : public Subcommand {
 public:
  const char* name() const override { return "info"; }
  const char* summary() const override {
    return "Summarise a dump: steps, ranks, task, level, framework, entry counts, tensors, "
           "problems";
  }
  std::vector<Flag> flags() override {
    return {
        {"path", "dump.json, rank dir, step dir or dump root", Flag::kString, &path_, true},
        {"--json", "print a JSON document instead of text", Flag::kBool, &json_},
        {"--no-data-check", "do not check that tensor data files exist", Flag::kBool, &no_data_},
    };
  }

  int run() override {
    std::vector<RankLocation> ranks = find_rank_dumps(path_);
    std::vector<RankSummary> summaries;
    std::vector<double> seconds;
    uint64_t total = 0, done = 0;
    for (const auto& r : ranks) total += r.has_dump_json ? file_size(r.dump_json) : 0;
    Progress progress("reading dumps", total);
    ReadOptions opt;
    opt.progress = [&](size_t parsed, size_t) { progress.update(done + parsed); };
    for (size_t i = 0; i < ranks.size(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      RankDump d = load_rank_dump(ranks[i], opt);
      summaries.push_back(summarize_rank(d, !no_data_));
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      done += ranks[i].has_dump_json ? file_size(ranks[i].dump_json) : 0;
      progress.update(done);
    }
    progress.finish();
    std::set<int64_t> steps;
    std::set<std::string> labels;
    size_t problems = 0;
    for (const auto& s : summaries) {
      steps.insert(s.where.step);
      labels.insert(s.where.rank_label);
      problems += s.problems.size();
    }
    if (json_) {
      std::string out;
      base::JsonWriter w(out, base::JsonDialect::python(1), 0);
      w.begin_object();
      w.key("path");
      w.string_value(path_);
      w.key("steps");
      w.begin_array();
      for (int64_t s : steps) w.int_value(s);
      w.end_array();
      w.key("ranks");
      w.begin_array();
      for (const auto& l : labels) w.string_value(l);
      w.end_array();
      w.key("dumps");
      w.begin_array();
      for (const auto& s : summaries) write_json(w, s);
      w.end_array();
      w.end_object();
      printf("%s\n", out.c_str());
      return 0;
    }
    printf("%s: %zu rank dump(s)", path_.c_str(), summaries.size());
    printf(" · steps:");
    for (int64_t s : steps) s >= 0 ? printf(" %lld", (long long)s) : printf(" -");
    printf(" · ranks:");
    for (const auto& l : labels) printf(" %s", l.empty() ? "-" : l.c_str());
    printf(" · problems: %zu\n\n", problems);
    for (size_t i = 0; i < summaries.size(); ++i) {
      print_text(summaries[i], seconds[i]);
      if (i + 1 < summaries.size()) printf("\n");
    }
    return 0;
  }

 private:
  std::string path_;
  bool json_ = false;
  bool no_data_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> make_info_command() {
  return std::make_unique<InfoCommand>();
}

}  // namespace numprobe::cli
