// The compare of two config_check packs (docs/config_check.md, "Checks and their pass rules"): one
// table per check with msprobe's columns and a status, written as result.xlsx and CSV files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/json_tree.h"
#include "config_check/pack_zip.h"

namespace numprobe::configcheck {

using Json = base::Json;

// A pack member's JSON, in Python's dialect (json.dump wrote it); an error names the pack and
// the member.
Json parse_member_json(const std::string& text, const std::string& file, const std::string& member);

// A cell as Python's csv module and openpyxl would write the value: text, a number (its text is
// Python's repr), True/False, or empty (None).
struct Cell {
  enum Kind { kEmpty, kText, kNumber, kBool } kind = kEmpty;
  std::string text;
  double number = 0;

  static Cell str(std::string s) { return {kText, std::move(s), 0}; }
  static Cell num(double v);
  static Cell integer(long long v) { return {kNumber, std::to_string(v), static_cast<double>(v)}; }
  static Cell flag(bool v) { return {kBool, v ? "True" : "False", v ? 1.0 : 0.0}; }
  bool is_false() const { return kind == kBool && text == "False"; }
};
using Row = std::vector<Cell>;

struct CheckTable {
  std::string name;  // the sheet and CSV name: env, pip, hyperparameters, weights, dataset, random
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::string status;  // pass, warning, error, skipped
  std::string note;    // why skipped
};

std::vector<CheckTable> compare_packs(const Pack& golden, const Pack& target,
                                      const std::string& framework);

// The per-check compares (config_compare_*.cc).
CheckTable compare_env(const Pack& bench, const Pack& cmp);
CheckTable compare_pip(const Pack& bench, const Pack& cmp, const std::string& framework);
CheckTable compare_hyperparameters(const Pack& bench, const Pack& cmp);
CheckTable compare_weights(const Pack& bench, const Pack& cmp);
CheckTable compare_dataset(const Pack& bench, const Pack& cmp);
CheckTable compare_random(const Pack& bench, const Pack& cmp);

// Writes summary.csv, <check>.csv and result.xlsx into out_dir (each to a temporary, renamed);
// removes a <check>.csv left by an earlier compare for a check now skipped. Returns result.xlsx.
std::string write_config_report(const std::vector<CheckTable>& tables, const std::string& out_dir);

// A check's status from its rows: error/warning/pass by the `level` column, or error unless every
// cell of a True/False column is True.
std::string level_status_of(const std::vector<Row>& rows, size_t column);
std::string flag_status_of(const std::vector<Row>& rows, size_t column);

// Python's repr of a float (shortest round trip; exponent form outside 1e-4 .. 1e16).
std::string python_float(double v);

}  // namespace numprobe::configcheck
