// `numprobe merge`: the shards' summary.json files -> the summary.json of the whole compare.
//
// Each shard wrote its pairs' objects exactly as an unsharded compare writes them, at the same
// depth, so their text is copied as it stands; what depends on every rank (the cross-rank origin,
// the coverage, the order of problems) is computed again from the "shard" blocks. Only summaries
// are read, never CSVs: merging 1,024 shards reads a few megabytes.
#include <algorithm>
#include <charconv>
#include <map>
#include <memory>

#include "base/json_cursor.h"
#include "compare/summary_writer.h"
#include "numprobe/compare/shard.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

// A unit's rank id, -1 for the unnumbered unit ("").
int64_t unit_number(const std::string& unit) {
  int64_t v = -1;
  if (unit.empty()) return -1;
  const auto r = std::from_chars(unit.data(), unit.data() + unit.size(), v);
  return r.ec == std::errc() && r.ptr == unit.data() + unit.size() && v >= 0 ? v : -2;
}

struct PairText {
  std::string text;  // the object as the shard wrote it
  PairDivergence d;
  Coverage coverage = Coverage::kNothingCompared;
  std::vector<std::string> problems;
};

struct ShardFile {
  std::string path;
  std::string mode;
  std::vector<PairText> pairs;
  std::vector<std::string> problems;
  bool has_block = false;
  int index = 0, count = 0;
  std::string run;
  std::string target, golden;
  int64_t pairs_total = -1, plan_problems = -1;
  std::vector<std::string> units;
  std::vector<int64_t> pair_index;
  std::vector<size_t> collectives;
  std::vector<std::vector<std::string>> pair_problems;
};

std::string read_text(base::JsonCursor& c) {
  if (c.peek() != base::JsonType::kString) c.fail_schema("expected a string");
  return std::string(c.read_string());
}

int64_t read_int(base::JsonCursor& c) {
  if (c.peek() != base::JsonType::kNumber) c.fail_schema("expected a whole number");
  const base::JsonNumber n = c.read_number();
  if (!n.is_int) c.fail_schema("expected a whole number");
  return n.int_value;
}

std::vector<std::string> read_strings(base::JsonCursor& c) {
  std::vector<std::string> out;
  if (c.peek() != base::JsonType::kArray) c.fail_schema("expected an array of strings");
  c.begin_array();
  while (c.next_item()) out.push_back(read_text(c));
  return out;
}

Coverage coverage_of(base::JsonCursor& c) {
  const std::string s = read_text(c);
  for (Coverage v : {Coverage::kCompared, Coverage::kMostlyUnmatched, Coverage::kNothingCompared})
    if (s == coverage_name(v)) return v;
  c.fail_schema("unknown coverage '" + s + "'");
}

// What the merge needs of a pair object: its place (step, rank), its coverage and its first
// divergence's entry and reason.
PairText read_pair(std::string_view raw, const std::string& path) {
  PairText p;
  p.text = std::string(raw);
  base::JsonCursor c(p.text.data(), p.text.size(), path);
  if (c.peek() != base::JsonType::kObject) c.fail_schema("a pair must be an object");
  c.begin_object();
  bool has_step = false, has_rank = false, has_coverage = false;
  std::string_view key;
  while (c.next_key(key)) {
    if (key == "step") {
      p.d.step = read_int(c);
      has_step = true;
    } else if (key == "rank") {
      p.d.rank = read_int(c);
      has_rank = true;
    } else if (key == "coverage") {
      p.coverage = coverage_of(c);
      has_coverage = true;
    } else if (key == "first_divergence" && c.peek() == base::JsonType::kObject) {
      p.d.diverged = true;
      c.begin_object();
      while (c.next_key(key)) {
        if (key == "entry") {
          p.d.entry = read_text(c);
        } else if (key == "reason") {
          p.d.reason = read_text(c);
        } else {
          c.skip_value();
        }
      }
      if (p.d.entry.empty() || p.d.reason.empty())
        c.fail_schema("first_divergence without entry and reason");
    } else {
      c.skip_value();
    }
  }
  if (!has_step || !has_rank || !has_coverage)
    c.fail_schema("a pair needs step, rank and coverage");
  return p;
}

void read_block(base::JsonCursor& c, ShardFile& f) {
  if (c.peek() != base::JsonType::kObject) c.fail_schema("\"shard\" must be an object");
  c.begin_object();
  f.has_block = true;
  int64_t format = 0;
  std::string_view key;
  while (c.next_key(key)) {
    if (key == "format") {
      format = read_int(c);
    } else if (key == "index" || key == "count") {
      const bool is_index = key == "index";
      const int64_t v = read_int(c);
      if (v < 1 || v > 1000000) c.fail_schema("shard index/count out of range");
      (is_index ? f.index : f.count) = static_cast<int>(v);
    } else if (key == "target") {
      f.target = read_text(c);
    } else if (key == "golden") {
      f.golden = read_text(c);
    } else if (key == "pairs_total") {
      f.pairs_total = read_int(c);
    } else if (key == "plan_problems") {
      f.plan_problems = read_int(c);
    } else if (key == "units") {
      f.units = read_strings(c);
    } else if (key == "pairs") {
      if (c.peek() != base::JsonType::kArray) c.fail_schema("shard \"pairs\" must be an array");
      c.begin_array();
      while (c.next_item()) {
        if (c.peek() != base::JsonType::kObject) c.fail_schema("a shard pair must be an object");
        c.begin_object();
        int64_t index = -1, collectives = 0;
        std::vector<std::string> problems;
        while (c.next_key(key)) {
          if (key == "index") {
            index = read_int(c);
          } else if (key == "collectives_before") {
            collectives = read_int(c);
          } else if (key == "problems") {
            problems = read_strings(c);
          } else {
            c.skip_value();
          }
        }
        if (index < 0 || collectives < 0) c.fail_schema("a shard pair needs its index");
        f.pair_index.push_back(index);
        f.collectives.push_back(static_cast<size_t>(collectives));
        f.pair_problems.push_back(std::move(problems));
      }
    } else if (key == "run") {
      f.run = read_text(c);
    } else {
      c.skip_value();  // source: informational
    }
  }
  if (format != 1) c.fail_schema("unknown shard block format (this numprobe reads format 1)");
  if (f.index < 1 || f.count < 1 || f.index > f.count || f.pairs_total < 0 || f.plan_problems < 0)
    c.fail_schema("the shard block needs index <= count, pairs_total and plan_problems");
}

ShardFile read_shard(const ShardSummaryFile& in) {
  ShardFile f;
  f.path = in.path;
  base::JsonCursor c(in.text.data(), in.text.size(), in.path);
  if (c.peek() != base::JsonType::kObject) c.fail_schema("a summary.json must be an object");
  c.begin_object();
  std::string_view key;
  while (c.next_key(key)) {
    if (key == "mode") {
      f.mode = read_text(c);
    } else if (key == "pairs") {
      if (c.peek() != base::JsonType::kArray) c.fail_schema("\"pairs\" must be an array");
      c.begin_array();
      while (c.next_item()) f.pairs.push_back(read_pair(c.raw_value(), in.path));
    } else if (key == "problems") {
      f.problems = read_strings(c);
    } else if (key == "shard") {
      read_block(c, f);
    } else {
      c.skip_value();
    }
  }
  c.expect_end();
  if (!f.has_block)
    throw InputError(in.path,
                     "not a shard's summary (no \"shard\" block: was it written with --shard?)");
  if (f.pair_index.size() != f.pairs.size())
    throw InputError(in.path, "the shard block lists " + std::to_string(f.pair_index.size()) +
                                  " pairs, the summary " + std::to_string(f.pairs.size()));
  if (static_cast<size_t>(f.plan_problems) > f.problems.size())
    throw InputError(in.path, "plan_problems exceeds the problems listed");
  // Units are rank ids or "" (the unnumbered ranks), each once: what plan_units makes.
  std::map<std::string, size_t> unit_at;
  for (size_t i = 0; i < f.units.size(); ++i) {
    if (unit_number(f.units[i]) == -2 || !unit_at.emplace(f.units[i], i).second)
      throw InputError(in.path, "shard units must be distinct rank ids");
  }
  // Each pair must lie in the shard's own ranks, at ascending plan indices within the plan.
  const auto [begin, end] = shard_unit_range(f.units.size(), f.index, f.count);
  for (size_t i = 0; i < f.pairs.size(); ++i) {
    PairText& p = f.pairs[i];
    const auto u = unit_at.find(p.d.rank >= 0 ? std::to_string(p.d.rank) : std::string());
    if (u == unit_at.end() || u->second < begin || u->second >= end)
      throw InputError(in.path, "pair " + std::to_string(i) + " (rank " + std::to_string(p.d.rank) +
                                    ") is not one of this shard's ranks");
    if (f.pair_index[i] >= f.pairs_total || (i > 0 && f.pair_index[i] <= f.pair_index[i - 1]))
      throw InputError(in.path, "pair indices must ascend within pairs_total");
    p.d.collectives_before = f.collectives[i];
    p.problems = std::move(f.pair_problems[i]);
  }
  return f;
}

}  // namespace

// "ranks 16-23", "ranks 3, 9", "(unnumbered)": what a shard compares.
std::string describe_units(const std::vector<std::string>& units, size_t begin, size_t end) {
  if (begin == end) return "no ranks";
  std::string s = end - begin == 1 ? "rank " : "ranks ";
  auto name = [&](size_t i) { return units[i].empty() ? std::string("(unnumbered)") : units[i]; };
  bool consecutive = true;
  for (size_t i = begin + 1; i < end && consecutive; ++i)
    consecutive =
        unit_number(units[i]) >= 0 && unit_number(units[i]) == unit_number(units[i - 1]) + 1;
  if (consecutive && end - begin > 2) return s + name(begin) + "-" + name(end - 1);
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) s += ", ";
    if (i - begin == 16) return s + "... (" + std::to_string(end - begin) + " in all)";
    s += name(i);
  }
  return s;
}

ShardSpec read_shard_spec(const ShardSummaryFile& file) {
  const ShardFile f = read_shard(file);
  ShardSpec s;
  s.index = f.index;
  s.count = f.count;
  s.run = f.run;
  return s;
}

MergeResult merge_shard_summaries(const std::vector<ShardSummaryFile>& files) {
  if (files.empty()) throw Error("merge: no shard summary given");
  std::vector<ShardFile> shards;
  for (const ShardSummaryFile& in : files) shards.push_back(read_shard(in));
  const ShardFile& first = shards.front();
  std::map<int, const ShardFile*> by_index;
  for (const ShardFile& s : shards) {
    auto differs = [&](const char* what) {
      throw Error("merge: " + s.path + " and " + first.path +
                  " are shards of different compares (" + what + " differ)");
    };
    if (s.count != first.count) differs("shard counts");
    if (s.target != first.target || s.golden != first.golden) differs("-t/-g");
    if (s.units != first.units || s.pairs_total != first.pairs_total) differs("rank lists");
    if (s.plan_problems != first.plan_problems ||
        !std::equal(s.problems.begin(), s.problems.begin() + s.plan_problems,
                    first.problems.begin()))
      differs("the ranks found on one side only");
    auto [it, fresh] = by_index.emplace(s.index, &s);
    if (!fresh)
      throw Error("merge: shard " + std::to_string(s.index) + "/" + std::to_string(s.count) +
                  " is given twice: " + it->second->path + " and " + s.path);
  }

  MergeResult r;
  r.count = first.count;
  r.pairs_total = static_cast<size_t>(first.pairs_total);
  std::map<int64_t, const PairText*> at;  // by plan index
  std::string mode = "none";
  int64_t mode_from = -1;  // the plan index whose shard gives "mode": the first pair's
  for (const auto& [index, s] : by_index) {
    r.present.push_back(index);
    for (size_t i = 0; i < s->pairs.size(); ++i) {
      const int64_t k = s->pair_index[i];
      if (!at.emplace(k, &s->pairs[i]).second)
        throw Error("merge: two shards hold pair " + std::to_string(k));
      if (mode_from < 0 || s->pair_index[i] < mode_from) {
        mode_from = s->pair_index[i];
        mode = s->mode;
      }
    }
  }
  for (int k = 1; k <= r.count; ++k) {
    if (by_index.count(k)) continue;
    r.missing.push_back(k);
    const auto [b, e] = shard_unit_range(first.units.size(), k, r.count);
    r.missing_ranks.push_back("shard " + std::to_string(k) + "/" + std::to_string(r.count) + ": " +
                              describe_units(first.units, b, e));
  }

  std::vector<const PairText*> pairs;
  for (const auto& [k, p] : at) pairs.push_back(p);
  r.pairs = pairs.size();
  std::vector<PairDivergence> divergences;
  std::vector<Coverage> coverages;
  std::vector<std::string> problems(first.problems.begin(),
                                    first.problems.begin() + first.plan_problems);
  for (const PairText* p : pairs) {
    divergences.push_back(p->d);
    coverages.push_back(p->coverage);
    problems.insert(problems.end(), p->problems.begin(), p->problems.end());
    if (p->d.diverged) r.divergences.push_back(p->d);
  }
  for (const std::string& m : r.missing_ranks)
    problems.push_back("not compared: " + m + " wrote no summary");
  const std::vector<CrossRankOrigin> origins = order_cross_rank_origins(divergences);
  r.coverage = combine_coverage(coverages);
  SummaryLayout layout{mode,
                       r.coverage,
                       [&](base::JsonWriter& w) {
                         for (const PairText* p : pairs) w.raw_value(p->text);
                       },
                       origins,
                       divergences,
                       problems,
                       nullptr};
  r.summary_json = render_summary(layout);
  for (const CrossRankOrigin& o : origins) {
    MergedOrigin m;
    m.step = o.step;
    const PairDivergence& d = divergences[static_cast<size_t>(o.pair)];
    m.rank = d.rank;
    m.entry = d.entry;
    m.reason = o.collective_itself ? "collective_diverges" : d.reason;
    m.collectives_before = o.collectives_before;
    for (int64_t i : o.received) m.received_by.push_back(divergences[static_cast<size_t>(i)].rank);
    r.origins.push_back(std::move(m));
  }
  return r;
}

}  // namespace numprobe
