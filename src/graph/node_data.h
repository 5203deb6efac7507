// The data of a graph node: its dump rows, rendered as msprobe's input_data / output_data JSON
// (docs/graph.md "The file"), and its colour value (precision_index) from the compare rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "numprobe/compare.h"

namespace numprobe::graph {

// The rows of one side grouped by entry, and the compare row (PairResult::rows) of each.
struct SideRows {
  const RowSet* rows = nullptr;
  std::vector<uint32_t> first, count;  // per entry
  std::vector<int32_t> result;         // per row: index into PairResult::rows, or -1
};
// Rows are in entry order (flatten_rows), so an entry's rows are contiguous.
SideRows index_rows(const RowSet& rows, size_t entries);
// Fills both sides' SideRows::result from the compare's row pairs.
void link_results(const PairResult& p, SideRows& target, SideRows& golden);

class NodeDataWriter {
 public:
  // `p`: the compare the rows belong to, nullptr for a build-only graph (the dump's fields only).
  explicit NodeDataWriter(const PairResult* p);
  // input_data (inputs, parameters, parameter grads) and output_data of `entry` (-1: "{}" both).
  // `with_metrics`: the target side of a compare also carries the row's metrics and verdict.
  void render(const SideRows& side, int64_t entry, bool with_metrics, std::string& input,
              std::string& output);

 private:
  void row_fields(std::string& out, const CompareRow& r, const RowResult* result);
  void metrics(std::string& out, const CompareRow& target, const RowResult& result, bool& first);
  const PairResult* p_;
};

// msprobe's colour value of a target entry (graph/node_colors.py, compare/mode_adapter.py):
// statistics: the largest relative error of the output statistics, capped at 1 (NaN or inf in
// an output's max or min: 1); md5: 1 when every row is equal, else 0; tensor: the inputs' smallest
// one-thousandth ratio minus the outputs', clamped to [0, 1]. nullopt when no row was compared.
std::optional<double> precision_of(const PairResult& p, const SideRows& target, int64_t entry);

}  // namespace numprobe::graph
