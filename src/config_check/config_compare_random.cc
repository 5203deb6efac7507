// The random check (docs/config_check.md): calls of the random APIs per call stack, stacks paired
// across runs as msprobe pairs them; counts and seed values must agree.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <tuple>

#include "config_check/config_compare.h"
#include "config_check/sequence_ratio.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

struct Entry {
  long long count = 0;
  std::vector<std::string> stack;
  bool has_seeds = false;
  std::vector<std::string> seeds;
};
using Ranks = std::map<long long, std::map<std::string, std::vector<Entry>>>;

Ranks read_ranks(const Pack& pack) {
  Ranks out;
  for (const auto& [name, bytes] : pack.members()) {
    if (name.compare(0, 7, "random/") != 0) continue;
    long long rank = -1;
    int used = 0;
    if (sscanf(name.c_str(), "random/rank%lld%n", &rank, &used) != 1 || rank < 0 ||
        name.substr(static_cast<size_t>(used)) != ".json" ||
        !std::isdigit(static_cast<unsigned char>(name[11])))
      throw InputError(pack.path(), "member " + name + " is not random/rank<R>.json");
    const Json j = parse_member_json(bytes, pack.path(), name);
    if (j.kind != Json::kObject)
      throw InputError(pack.path(), "member " + name + " is not a JSON object");
    auto& apis = out[rank];
    for (const auto& [api, list] : j.fields) {
      if (list.kind != Json::kArray)
        throw InputError(pack.path(), "member " + name + ": " + api + " is not a list of calls");
      auto& entries = apis[api];
      entries.clear();
      for (const Json& e : list.items) {
        Entry entry;
        if (const Json* c = e.find("count"); c && c->is_number())
          entry.count = static_cast<long long>(c->number);
        if (const Json* s = e.find("stack"); s && s->kind == Json::kArray)
          for (const Json& line : s->items) entry.stack.push_back(line.python_str());
        if (const Json* s = e.find("seeds"); s && s->kind == Json::kArray) {
          entry.has_seeds = true;
          for (const Json& v : s->items) entry.seeds.push_back(v.python_str());
        }
        entries.push_back(std::move(entry));
      }
    }
  }
  return out;
}

// "File {path}, line {n}, in {func}, {code}" -> (file name, function, code).
std::tuple<std::string, std::string, std::string> parse_frame(const std::string& frame) {
  const size_t line = frame.find(", line ");
  const std::string head = frame.substr(0, line);
  std::string rest = line == std::string::npos ? "" : frame.substr(line + 7);
  const size_t in = rest.find(", in ");
  const std::string after = in == std::string::npos ? "" : rest.substr(in + 5);
  const size_t comma = after.find(", ");
  const std::string func = after.substr(0, comma);
  const std::string code = comma == std::string::npos ? "" : after.substr(comma + 2);
  const std::string path = head.size() > 5 ? head.substr(5) : "";
  return {path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1), func, code};
}

bool stacks_match(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto [fa, ga, ca] = parse_frame(a[i]);
    const auto [fb, gb, cb] = parse_frame(b[i]);
    const double score =
        ((fa == fb ? 1.0 : 0.0) + (ga == gb ? 1.0 : 0.0) + sequence_ratio(ca, cb)) / 3;
    if (score < 0.8) return false;
  }
  return true;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

std::string count_text(const Entry& e) {
  if (!e.has_seeds || e.seeds.empty()) return std::to_string(e.count);
  std::string seeds;
  for (size_t i = 0; i < e.seeds.size(); ++i) seeds += (i ? ", " : "") + e.seeds[i];
  return std::to_string(e.count) + " (seeds " + seeds + ")";
}

}  // namespace

CheckTable compare_random(const Pack& bench_pack, const Pack& cmp_pack) {
  const Ranks bench = read_ranks(bench_pack), cmp = read_ranks(cmp_pack);
  CheckTable t{
      "random",
      {"op", "rank", "bench_stack", "cmp_stack", "bench_count", "cmp_count", "check_result"},
      {},
      "",
      ""};
  std::map<long long, int> ranks;
  for (const auto& kv : bench) ranks[kv.first] |= 1;
  for (const auto& kv : cmp) ranks[kv.first] |= 2;
  static const std::map<std::string, std::vector<Entry>> kNone;
  for (const auto& [rank, sides] : ranks) {
    const auto& b = sides & 1 ? bench.at(rank) : kNone;
    const auto& c = sides & 2 ? cmp.at(rank) : kNone;
    std::map<std::string, int> apis;
    for (const auto& kv : b) apis[kv.first] |= 1;
    for (const auto& kv : c) apis[kv.first] |= 2;
    for (const auto& [api, where] : apis) {
      std::vector<const Entry*> free;
      if (where & 2)
        for (const Entry& e : c.at(api)) free.push_back(&e);
      if (where & 1) {
        for (const Entry& e : b.at(api)) {
          auto it = std::find_if(free.begin(), free.end(),
                                 [&](const Entry* o) { return stacks_match(e.stack, o->stack); });
          if (it == free.end()) {
            t.rows.push_back({Cell::str(api), Cell::integer(rank), Cell::str(join(e.stack)),
                              Cell::str("no match stack"), Cell::str(count_text(e)), Cell::str("0"),
                              Cell::flag(false)});
            continue;
          }
          const Entry* o = *it;
          free.erase(it);
          const bool ok = e.count == o->count && e.has_seeds == o->has_seeds && e.seeds == o->seeds;
          t.rows.push_back({Cell::str(api), Cell::integer(rank), Cell::str(join(e.stack)),
                            Cell::str(join(o->stack)), Cell::str(count_text(e)),
                            Cell::str(count_text(*o)), Cell::flag(ok)});
        }
      }
      for (const Entry* o : free)
        t.rows.push_back({Cell::str(api), Cell::integer(rank), Cell::str("no match stack"),
                          Cell::str(join(o->stack)), Cell::str("0"), Cell::str(count_text(*o)),
                          Cell::flag(false)});
    }
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const Row& x, const Row& y) {
    const bool fx = x[6].is_false(), fy = y[6].is_false();
    if (fx != fy) return fx;
    if (x[1].number != y[1].number) return x[1].number < y[1].number;
    return x[0].text < y[0].text;
  });
  t.status = flag_status_of(t.rows, 6);
  return t;
}

}  // namespace numprobe::configcheck
