// Pairing two dumps for compare: entries first (exact name, then the n-th call of the same op in
// the same direction, so runs whose call counters drift still pair), then rows inside paired
// entries by their suffix (".input.0", ".parameters.weight", ...).
#pragma once

#include <cstdint>
#include <vector>

#include "numprobe/compare_rows.h"
#include "numprobe/dump.h"

namespace numprobe {

enum class MatchKind : uint8_t { kExact, kRenumbered, kFuzzy, kUnmatched };
const char* match_kind_name(MatchKind k);

struct EntryPairing {
  std::vector<int64_t> golden_of;     // per target entry: golden entry index or -1
  std::vector<MatchKind> how;         // per target entry
  std::vector<uint32_t> golden_only;  // golden entries nobody paired, in golden order
};

EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden);

// The same, then a third stage for entries both earlier stages left: a sequence alignment (a
// weighted LCS by dynamic programming, order-preserving, between the anchors already paired) of
// the leftover target and golden entries, scoring same direction + op name (ignoring the API
// prefix, so Mint.matmul meets Torch.matmul) + the shapes and dtypes of their tensor rows. Pairs
// scoring below a same-op or same-signature match stay unmatched. kFuzzy marks these pairs.
EntryPairing pair_entries(const DumpFile& target, const DumpFile& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows);

struct RowPair {
  int64_t target = -1;  // index into the target rows, -1 for a golden-only row
  int64_t golden = -1;  // index into the golden rows, -1 for a target-only row
  MatchKind how = MatchKind::kUnmatched;
};

// Rows in target order; golden-only rows of paired entries follow their entry's rows, rows of
// unpaired golden entries come last (msprobe drops those; we report them).
std::vector<RowPair> pair_rows(const EntryPairing& entries, const std::vector<CompareRow>& target,
                               const std::vector<CompareRow>& golden);

}  // namespace numprobe
