// difflib's SequenceMatcher ratio (sequence_ratio.h), after CPython's Lib/difflib.py algorithm.
#include "config_check/sequence_ratio.h"

#include <array>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace numprobe::configcheck {
namespace {

struct Matcher {
  std::string_view a, b;
  std::array<std::vector<size_t>, 256> b2j;  // byte -> its positions in b (popular ones emptied)

  Matcher(std::string_view sa, std::string_view sb) : a(sa), b(sb) {
    for (size_t j = 0; j < b.size(); ++j) b2j[static_cast<unsigned char>(b[j])].push_back(j);
    if (b.size() >= 200) {
      const size_t ntest = b.size() / 100 + 1;
      for (auto& v : b2j)
        if (v.size() > ntest) v.clear();
    }
  }

  std::tuple<size_t, size_t, size_t> longest(size_t alo, size_t ahi, size_t blo, size_t bhi) const {
    size_t besti = alo, bestj = blo, bestsize = 0;
    std::unordered_map<size_t, size_t> j2len, next;
    for (size_t i = alo; i < ahi; ++i) {
      next.clear();
      for (size_t j : b2j[static_cast<unsigned char>(a[i])]) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const auto it = j > 0 ? j2len.find(j - 1) : j2len.end();
        const size_t k = (it == j2len.end() ? 0 : it->second) + 1;
        next[j] = k;
        if (k > bestsize) {
          besti = i + 1 - k;
          bestj = j + 1 - k;
          bestsize = k;
        }
      }
      std::swap(j2len, next);
    }
    // No junk: extend over equal (popular) bytes on both sides.
    while (besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1]) {
      --besti;
      --bestj;
      ++bestsize;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi &&
           a[besti + bestsize] == b[bestj + bestsize])
      ++bestsize;
    return {besti, bestj, bestsize};
  }

  size_t matched() const {
    size_t total = 0;
    std::vector<std::array<size_t, 4>> queue{{0, a.size(), 0, b.size()}};
    while (!queue.empty()) {
      const auto [alo, ahi, blo, bhi] = queue.back();
      queue.pop_back();
      const auto [i, j, k] = longest(alo, ahi, blo, bhi);
      if (k == 0) continue;
      total += k;
      if (alo < i && blo < j) queue.push_back({alo, i, blo, j});
      if (i + k < ahi && j + k < bhi) queue.push_back({i + k, ahi, j + k, bhi});
    }
    return total;
  }
};

}  // namespace

double sequence_ratio(std::string_view a, std::string_view b) {
  const size_t length = a.size() + b.size();
  if (length == 0) return 1.0;
  return 2.0 * static_cast<double>(Matcher(a, b).matched()) / static_cast<double>(length);
}

}  // namespace numprobe::configcheck
