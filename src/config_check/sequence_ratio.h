// Python difflib's SequenceMatcher(None, a, b).ratio() over bytes: 2·M / (|a| + |b|), M the
// characters of the matching blocks found by its longest-match recursion, with its "popular
// element" heuristic for b of 200 or more. msprobe matches names and stack lines with it.
#pragma once

#include <string_view>

namespace numprobe::configcheck {

double sequence_ratio(std::string_view a, std::string_view b);

}  // namespace numprobe::configcheck
