// numprobe_meta's "findings" (docs/graph.md): per "{step}/{rank}", the first divergence and the
// suspects, each a Finding object naming a node and its side. msprobe's files have none.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::serve {

struct Suspect {
  std::string node;
  std::string side;  // "target" or "golden"
  std::string json;  // the Finding object's text, as the file has it
};

class Findings {
 public:
  // The findings object's text ("" for none). Malformed entries are skipped.
  explicit Findings(std::string_view json);
  // The suspects of one graph in order (the first is the first divergence); empty when none.
  const std::vector<Suspect>& suspects(int64_t step, int64_t rank) const;
  // The index of a node among its graph's suspects on `side`, or -1.
  int index_of(int64_t step, int64_t rank, const std::string& side, const std::string& node) const;

 private:
  std::map<std::string, std::vector<Suspect>> by_graph_;
};

}  // namespace numprobe::serve
