// summary.json's layout, shared by compare (one process, every pair in memory) and merge (the
// shards' pair objects copied as written, origins ordered again across all of them), so that the
// two write the same bytes (docs/compare.md "summary.json", docs/scale.md).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_writer.h"
#include "numprobe/compare.h"
#include "numprobe/compare/shard.h"

namespace numprobe {

struct SummaryLayout {
  std::string_view mode;  // "none" when there is no pair
  Coverage coverage;
  // Writes the items of "pairs" (each one a write_pair_summary object, or its text as written).
  std::function<void(base::JsonWriter&)> pairs;
  const std::vector<CrossRankOrigin>& origins;
  const std::vector<PairDivergence>& divergences;  // what origins[i].pair and .received index
  const std::vector<std::string>& problems;
  // More keys after "problems" (a shard's "shard" block); may be empty.
  std::function<void(base::JsonWriter&)> extra;
};
std::string render_summary(const SummaryLayout& s);

// render_summary of a compare held in memory; `divergences` indexes as rep.pairs does.
std::string render_report_summary(const CompareReport& rep,
                                  const std::vector<PairDivergence>& divergences,
                                  const std::function<void(base::JsonWriter&)>& extra);

// One element of "pairs".
void write_pair_summary(base::JsonWriter& w, const PairResult& p);

// report_coverage over pair coverages: nothing_compared when none compared a row (or there is no
// pair), mostly_unmatched when some pair did not compare most of its rows, compared otherwise.
Coverage combine_coverage(const std::vector<Coverage>& pairs);

}  // namespace numprobe
