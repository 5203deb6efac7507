// Pairing two dumps for compare: entries first (user mappings, exact name, then the n-th call of
// the same op in the same direction, so runs whose call counters drift still pair), then rows
// inside paired entries by their suffix (".input.0", ".parameters.weight", ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numprobe/compare/rows.h"
#include "numprobe/dump.h"
#include "numprobe/stack_construct.h"

namespace numprobe {

// kMapped: paired by a user mapping (-dm/-cm/-am/-lm, compare/mapping.h).
enum class MatchKind : uint8_t { kExact, kRenumbered, kAlias, kFuzzy, kMapped, kUnmatched };
const char* match_kind_name(MatchKind k);

struct EntryPairing {
  std::vector<int64_t> golden_of;     // per target entry: golden entry index or -1
  std::vector<MatchKind> how;         // per target entry
  std::vector<uint32_t> golden_only;  // golden entries nobody paired, in golden order
};

// Pairings fixed by user mappings before the name-based stages (built by plan_mappings in
// compare/mapping.h). Sizes: entry and renamed = target entries, row and row_dtype_unchecked =
// target rows; an empty plan changes nothing.
struct MappingPlan {
  static constexpr int64_t kOpen = -2;  // undecided: the name-based stages may pair it
  std::vector<int64_t> entry;           // golden entry (kMapped), -1 = stays unmatched, or kOpen
  std::vector<std::string> renamed;     // the name the mapping gives it on the golden side, or ""
  std::vector<int64_t> row;             // golden row (kMapped), -1 = stays unmatched, or kOpen
  // Rows a data mapping pairs (-dm, and -lm which msprobe runs as one) are paired whatever their
  // dtypes: no dtype_mismatch warning.
  std::vector<bool> row_dtype_unchecked;
  bool empty() const { return entry.empty() && row.empty(); }
};

// Per entry of each side: the entry index of its innermost enclosing module instance (the
// construct.json parent, walked up until a name the dump holds), -1 at the top or unknown. With
// scopes, an API entry pairs only inside the module instance paired with its own (the n-th call of
// an op inside a module with the n-th call of it inside the paired module), so call counters that
// shift inside one module (another attention implementation building its mask with other calls)
// cannot pair the rows of another.
struct EntryScopes {
  std::vector<int64_t> target, golden;
  bool empty() const { return target.empty() || golden.empty(); }
};
// -1 for every entry when `construct` is null.
std::vector<int64_t> enclosing_modules(const DumpFile& d, const ConstructTable* construct);

EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden);

// The same, then a third stage for entries both earlier stages left: a sequence alignment (a
// weighted LCS by dynamic programming, order-preserving, between the anchors already paired) of
// the leftover target and golden entries, scoring same direction + op name (ignoring the API
// prefix, so Mint.matmul meets Torch.matmul) + the shapes and dtypes of their tensor rows. Pairs
// scoring below a same-op or same-signature match stay unmatched. kFuzzy marks these pairs.
// With a plan, its entry pairs come first (kMapped), entries it closes (-1) stay unmatched, and
// renumbering compares a renamed entry by its golden-side name.
EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows,
                          const MappingPlan* plan = nullptr, const EntryScopes* scopes = nullptr);

struct RowPair {
  int64_t target = -1;  // index into the target rows, -1 for a golden-only row
  int64_t golden = -1;  // index into the golden rows, -1 for a target-only row
  MatchKind how = MatchKind::kUnmatched;
  bool dtype_checked = true;  // false for rows a data mapping paired
};

// Rows in target order; golden-only rows of paired entries follow their entry's rows, rows of
// unpaired golden entries come last (msprobe drops those; we report them). A plan's row pairs
// (kMapped) override the suffix rule; a golden row serves one target row at most.
std::vector<RowPair> pair_rows(const EntryPairing& entries, const std::vector<CompareRow>& target,
                               const std::vector<CompareRow>& golden,
                               const MappingPlan* plan = nullptr);

}  // namespace numprobe
