// The weights and dataset checks (docs/config_check.md): max/min/mean/norm per parameter or input
// tensor, per step and rank, wanted bit-equal; relative differences shown.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "config_check/config_compare.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

const char* const kStats[] = {"max", "min", "mean", "norm"};
constexpr int kMaxDepth = 64;

using StepRank = std::pair<long long, long long>;

// `<prefix>/step<N>/rank<R>/<file>` members of pack, parsed.
std::map<StepRank, Json> by_step_rank(const Pack& pack, const std::string& prefix,
                                      const std::string& file) {
  std::map<StepRank, Json> out;
  const std::string head = prefix + "/step";
  for (const auto& [name, bytes] : pack.members()) {
    if (name.compare(0, prefix.size() + 1, prefix + "/") != 0) continue;
    long long step = -1, rank = -1;
    int used = 0;
    const std::string tail = "/" + file;
    const bool shaped =
        name.compare(0, head.size(), head) == 0 &&
        sscanf(name.c_str() + head.size(), "%lld/rank%lld%n", &step, &rank, &used) == 2 &&
        step >= 0 && rank >= 0 && name.substr(head.size() + static_cast<size_t>(used)) == tail &&
        std::isdigit(static_cast<unsigned char>(name[head.size()]));
    if (!shaped)
      throw InputError(pack.path(),
                       "member " + name + " is not " + prefix + "/step<N>/rank<R>/" + file);
    Json j = parse_member_json(bytes, pack.path(), name);
    if (j.kind != Json::kObject)
      throw InputError(pack.path(), "member " + name + " is not a JSON object");
    out[{step, rank}] = std::move(j);
  }
  return out;
}

bool is_stats(const Json& v) {
  if (v.kind != Json::kObject || v.fields.size() != 4) return false;
  for (const char* k : kStats)
    if (!v.find(k)) return false;
  return true;
}

bool same(const Json* a, const Json* b) {
  if (a->is_number() && b->is_number())
    return a->number == b->number || (std::isnan(a->number) && std::isnan(b->number));
  return a->python_repr() == b->python_repr();
}

Cell relative(const Json* b, const Json* c) {
  if (!b->is_number() || !c->is_number() || b->number == 0 || std::isnan(b->number) ||
      std::isnan(c->number))
    return {};
  return Cell::num(std::fabs(b->number - c->number) / std::fabs(b->number));
}

Row stat_cells(const Json& b, const Json& c) {
  bool equal = true;
  for (const char* k : kStats) equal = equal && same(b.find(k), c.find(k));
  Row r{Cell::flag(equal)};
  for (const char* k : kStats) r.push_back(relative(b.find(k), c.find(k)));
  return r;
}

Row missing(const std::string& label, Cell equal) {
  return {Cell::str(label), equal, {}, {}, {}, {}};
}

void compare_inputs(const Json& bench, const Json& cmp, const std::string& tag, int depth,
                    std::vector<Row>& out) {
  if (depth > kMaxDepth) return;
  auto visit = [&](const std::string& key) {
    const std::string path = tag.empty() ? key : tag + "." + key;
    const Json* b = bench.find(key);
    const Json* c = cmp.find(key);
    if (!b || !c) {
      out.push_back(missing(path, Cell::flag(false)));
    } else if (is_stats(*b) && is_stats(*c)) {
      Row r{Cell::str(path)};
      for (Cell& cell : stat_cells(*b, *c)) r.push_back(std::move(cell));
      out.push_back(std::move(r));
    } else if (b->kind == Json::kObject && c->kind == Json::kObject) {
      compare_inputs(*b, *c, path, depth + 1, out);
    } else if (b->python_repr() != c->python_repr()) {
      out.push_back(missing(path, Cell::flag(false)));
    }
  };
  for (const auto& f : bench.fields) visit(f.first);
  for (const auto& f : cmp.fields)
    if (!bench.find(f.first)) visit(f.first);
}

void compare_weights_file(const Json& bench, const Json& cmp, std::vector<Row>& out) {
  std::map<std::string, std::pair<const Json*, const Json*>> names;
  for (const auto& f : bench.fields) names[f.first].first = bench.find(f.first);
  for (const auto& f : cmp.fields) names[f.first].second = cmp.find(f.first);
  for (const auto& [name, sides] : names) {
    if (!sides.second) {
      out.push_back(missing(name, Cell::str("only bench have")));
    } else if (!sides.first) {
      out.push_back(missing(name, Cell::str("only cmp have")));
    } else if (is_stats(*sides.first) && is_stats(*sides.second)) {
      Row r{Cell::str(name)};
      for (Cell& cell : stat_cells(*sides.first, *sides.second)) r.push_back(std::move(cell));
      out.push_back(std::move(r));
    } else {
      out.push_back(missing(name, Cell::flag(false)));
    }
  }
}

CheckTable compare_steps(const Pack& bench, const Pack& cmp, const std::string& check,
                         const std::string& file, const std::string& label, bool weights) {
  const auto b = by_step_rank(bench, check, file), c = by_step_rank(cmp, check, file);
  std::map<StepRank, int> keys;
  for (const auto& kv : b) keys[kv.first] |= 1;
  for (const auto& kv : c) keys[kv.first] |= 2;
  CheckTable t{check,
               {"step", "rank", label, "equal", "max_relative_diff", "min_relative_diff",
                "mean_relative_diff", "norm_relative_diff"},
               {},
               "",
               ""};
  for (const auto& [key, sides] : keys) {
    const Row prefix{Cell::integer(key.first), Cell::integer(key.second)};
    std::vector<Row> rows;
    if (sides != 3) {
      rows.push_back(
          missing("(step" + std::to_string(key.first) + "/rank" + std::to_string(key.second) + ")",
                  Cell::str(sides == 1 ? "only bench have" : "only cmp have")));
    } else if (weights) {
      compare_weights_file(b.at(key), c.at(key), rows);
    } else {
      compare_inputs(b.at(key), c.at(key), "", 0, rows);
    }
    for (Row& r : rows) {
      Row full = prefix;
      full.insert(full.end(), r.begin(), r.end());
      t.rows.push_back(std::move(full));
    }
  }
  t.status = flag_status_of(t.rows, 3);
  return t;
}

}  // namespace

CheckTable compare_weights(const Pack& bench, const Pack& cmp) {
  return compare_steps(bench, cmp, "weights", "weight.json", "weight_name", true);
}

CheckTable compare_dataset(const Pack& bench, const Pack& cmp) {
  return compare_steps(bench, cmp, "dataset", "dataset.json", "tag", false);
}

}  // namespace numprobe::configcheck
