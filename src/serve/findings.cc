#include "serve/findings.h"

#include "base/json_cursor.h"
#include "numprobe/error.h"

namespace numprobe::serve {
namespace {

std::string key_of(int64_t step, int64_t rank) {
  return std::to_string(step) + "/" + std::to_string(rank);
}

// A Finding's node and side, read from its own text.
bool read_finding(std::string_view json, Suspect& s) {
  base::JsonCursor c(json.data(), json.size(), "<finding>", 64);
  if (c.peek() != base::JsonType::kObject) return false;
  s.side = "target";
  c.begin_object();
  std::string_view k;
  while (c.next_key(k)) {
    const bool node = k == "node", side = k == "side";
    if ((node || side) && c.peek() == base::JsonType::kString) {
      (node ? s.node : s.side) = std::string(c.read_string());
    } else {
      c.skip_value();
    }
  }
  s.json = std::string(json);
  return !s.node.empty();
}

std::vector<Suspect> read_graph(base::JsonCursor& c) {
  std::vector<Suspect> out;
  if (c.peek() != base::JsonType::kObject) {
    c.skip_value();
    return out;
  }
  c.begin_object();
  std::string_view k;
  while (c.next_key(k)) {
    if (k != "suspects" || c.peek() != base::JsonType::kArray) {
      c.skip_value();
      continue;
    }
    c.begin_array();
    while (c.next_item()) {
      Suspect s;
      if (read_finding(c.raw_value(), s)) out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace

Findings::Findings(std::string_view json) {
  if (json.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
  try {
    base::JsonCursor c(json.data(), json.size(), "<findings>", 64);
    if (c.peek() != base::JsonType::kObject) return;
    c.begin_object();
    std::string_view k;
    while (c.next_key(k)) {
      std::string graph(k);
      by_graph_[graph] = read_graph(c);
    }
  } catch (const InputError&) {
    // What was read before the damage stays.
  }
}

const std::vector<Suspect>& Findings::suspects(int64_t step, int64_t rank) const {
  static const std::vector<Suspect> kNone;
  auto it = by_graph_.find(key_of(step, rank));
  return it == by_graph_.end() ? kNone : it->second;
}

int Findings::index_of(int64_t step, int64_t rank, const std::string& side,
                       const std::string& node) const {
  const auto& list = suspects(step, rank);
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].node == node && list[i].side == side) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace numprobe::serve
