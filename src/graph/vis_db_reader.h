// Reads a .vis.db (msprobe's graph file or numprobe's, docs/graph.md "The file") for the viewer:
// one query per question, on msprobe's own indexes (index1: children by parent in order; index2:
// a node by name), so a file of a million nodes opens and answers in milliseconds. Nothing is
// loaded whole; the JSON columns are parsed only for the rows asked for.
//
// The file is opened read-only and every statement binds its parameters (no SQL is built from
// text). Malformed JSON columns never throw out of a query: the value reads as empty.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace numprobe::graph {

enum class Side { kTarget, kGolden };  // data_source NPU / Bench

// Which graph of the file: one side of one step and rank (and optionally one micro-step).
struct GraphKey {
  int64_t step = 0;
  int64_t rank = 0;
  Side side = Side::kTarget;
  std::optional<int64_t> micro_step;  // nullopt: all micro-steps
};

// One colour bin of tb_config.node_colors: lo <= v < hi, the highest bin inclusive of hi; a bin
// with lo == hi (md5) matches that value only; a bin without a range (the grey) matches nothing.
struct ColorBin {
  std::string color;
  bool has_range = false;
  double lo = 0, hi = 0;
  std::string description;
};

struct VisConfig {
  std::string graph_type;  // "compare" or "build"
  std::string task;        // "summary", "md5", "all"
  std::string tool_tip;    // raw JSON text ("{}" when absent or malformed)
  int64_t micro_steps = 0;
  std::vector<ColorBin> colors;  // in the file's order, grey included when the file lists it
  std::vector<int64_t> steps, ranks;
};

inline constexpr const char* kUnmatchedColor = "#C7C7C7";

struct NodeSummary {
  std::string name;
  int type = 0;  // node_type (NodeType values; other values are passed on)
  int64_t children = 0;
  std::optional<double> precision;  // the target's precision_index (a golden node: its match's)
  std::string color;                // "" when it has none (not compared)
  bool matched = false;
};

// One compare row of input_data / output_data: its name and its fields as text, in file order.
struct DataRow {
  std::string name;
  std::vector<std::pair<std::string, std::string>> fields;
};

struct NodeDetail : NodeSummary {
  std::vector<std::string> parent_chain;  // root ... parent
  std::vector<std::string> matched_link;  // the match's chain in the other graph, ending with it
  int64_t micro_step = 0;
  std::vector<DataRow> input, output;
  std::vector<std::string> stack;
};

struct SearchHit {
  std::string name;
  std::vector<std::string> path;  // root ... name
  std::string color;
};

struct SearchResult {
  std::vector<SearchHit> results;
  bool truncated = false;
};

class VisDbReader {
 public:
  // Throws InputError naming the file when it is not an SQLite file or lacks tb_nodes/tb_config.
  explicit VisDbReader(const std::string& path);
  ~VisDbReader();
  VisDbReader(const VisDbReader&) = delete;
  VisDbReader& operator=(const VisDbReader&) = delete;

  const std::string& path() const { return path_; }
  const VisConfig& config() const { return config_; }
  // numprobe_meta's rows (key -> raw JSON text); empty for msprobe's own files.
  const std::vector<std::pair<std::string, std::string>>& meta() const { return meta_; }
  // Whether the file holds a golden (Bench) graph at all.
  bool has_golden() const { return has_golden_; }
  // Whether (step, rank) is one of the file's graphs.
  bool has_graph(int64_t step, int64_t rank) const;

  // The children of `parent` in execution order (node_order); no parent: the roots.
  std::vector<NodeSummary> children(const GraphKey& g, const std::optional<std::string>& parent);
  std::optional<NodeDetail> node(const GraphKey& g, const std::string& name);
  // Case-insensitive substring of the node name, in node_order, at most `limit` hits.
  SearchResult search(const GraphKey& g, const std::string& query, size_t limit);
  // Nodes of one colour ("#RRGGBB", the grey included), or unmatched ones, in node_order.
  SearchResult filter_color(const GraphKey& g, const std::string& color, size_t limit);
  SearchResult filter_unmatched(const GraphKey& g, size_t limit);
  // The path (root ... name) of a node, from its up_node chain; empty when it is not there.
  std::vector<std::string> path_of(const GraphKey& g, const std::string& name);

  // The colour of a precision value by the file's bins ("" when no bin holds it).
  std::string color_of(double precision) const;

 private:
  struct Statements;
  struct Row;
  Row read_row(void* stmt) const;
  NodeSummary summarize(const GraphKey& g, const Row& r);
  std::optional<double> target_precision(const GraphKey& g, const std::string& name);
  SearchResult scan(const GraphKey& g, size_t limit, int kind, const std::string& arg);

  std::string path_;
  void* db_ = nullptr;  // sqlite3*
  std::unique_ptr<Statements> st_;
  VisConfig config_;
  std::vector<std::pair<std::string, std::string>> meta_;
  bool has_golden_ = false;
};

}  // namespace numprobe::graph
