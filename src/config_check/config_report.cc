// The compare's files (config_compare.h): summary and per-check CSV files and result.xlsx.
#include <xlsxwriter.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "base/csv.h"
#include "base/file_util.h"
#include "config_check/config_compare.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

constexpr size_t kMaxCellChars = 32767;  // Excel's longest cell text
constexpr lxw_color_t kRedFill = 0xFFC7CE, kYellowFill = 0xFFEB9C;

struct Table {
  std::string name;
  std::vector<std::string> header;
  const std::vector<Row>* rows;
};

std::vector<Row> summary_rows(const std::vector<CheckTable>& tables) {
  std::vector<Row> rows;
  for (const CheckTable& t : tables)
    rows.push_back({Cell::str(t.name), Cell::str(t.status),
                    Cell::integer(static_cast<long long>(t.rows.size())),
                    t.note.empty() ? Cell{} : Cell::str(t.note)});
  return rows;
}

// A text cell that starts like a formula gets a leading "'" (numbers, as text, keep their sign).
std::string guarded(const Cell& c) {
  if (c.kind != Cell::kText || !csv_starts_like_formula(c.text)) return c.text;
  char* end = nullptr;
  std::strtod(c.text.c_str(), &end);
  if (!c.text.empty() && end && *end == '\0') return c.text;
  return "'" + c.text;
}

// One CSV line: each cell quoted on its own (csv_append_cell puts no comma before a first cell,
// so an empty first cell would swallow the comma after it).
std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string cell;
    csv_append_cell(cell, cells[i]);
    line += (i ? "," : "") + cell;
  }
  return line + "\n";
}

void write_csv(const std::string& path, const Table& t) {
  std::string text = csv_line(t.header);
  for (const Row& r : *t.rows) {
    std::vector<std::string> cells;
    for (const Cell& c : r) cells.push_back(guarded(c));
    text += csv_line(cells);
  }
  base::write_file_atomic(path, text);
}

enum class Highlight { kNone, kRed, kYellow };

// Red for a failing row (level error, a False), yellow for a warning.
Highlight highlight(const Row& r) {
  bool warning = false;
  for (const Cell& c : r) {
    if (c.text == "error" || c.is_false()) return Highlight::kRed;
    warning = warning || c.text == "warning";
  }
  return warning ? Highlight::kYellow : Highlight::kNone;
}

struct WorkbookFree {
  void operator()(lxw_workbook* wb) const { lxw_workbook_free(wb); }
};

void write_xlsx(const std::string& path, const std::vector<Table>& tables) {
  base::TempPath tmp(path);
  std::unique_ptr<lxw_workbook, WorkbookFree> wb(workbook_new(tmp.tmp().c_str()));
  if (!wb) throw Error(path + ": cannot start the workbook");
  auto check = [&](lxw_error e) {
    if (e != LXW_NO_ERROR) throw Error(path + ": " + lxw_strerror(e));
  };
  lxw_format* bold = workbook_add_format(wb.get());
  format_set_bold(bold);
  lxw_format* fills[2];
  for (int i = 0; i < 2; ++i) {
    fills[i] = workbook_add_format(wb.get());
    format_set_pattern(fills[i], LXW_PATTERN_SOLID);
    format_set_bg_color(fills[i], i == 0 ? kRedFill : kYellowFill);
  }
  for (const Table& t : tables) {
    lxw_worksheet* ws = workbook_add_worksheet(wb.get(), t.name.substr(0, 31).c_str());
    if (!ws) throw Error(path + ": cannot add sheet " + t.name);
    for (size_t col = 0; col < t.header.size(); ++col)
      check(
          worksheet_write_string(ws, 0, static_cast<lxw_col_t>(col), t.header[col].c_str(), bold));
    lxw_row_t row = 1;
    for (const Row& r : *t.rows) {
      const Highlight h = highlight(r);
      lxw_format* f = h == Highlight::kRed      ? fills[0]
                      : h == Highlight::kYellow ? fills[1]
                                                : nullptr;
      for (size_t col = 0; col < r.size(); ++col) {
        const Cell& c = r[col];
        const auto cc = static_cast<lxw_col_t>(col);
        if (c.kind == Cell::kNumber) {
          check(worksheet_write_number(ws, row, cc, c.number, f));
        } else if (c.kind == Cell::kBool) {
          check(worksheet_write_boolean(ws, row, cc, c.text == "True", f));
        } else if (c.kind == Cell::kText && !c.text.empty()) {
          const std::string text =
              c.text.size() > kMaxCellChars ? c.text.substr(0, kMaxCellChars) : c.text;
          check(worksheet_write_string(ws, row, cc, text.c_str(), f));
        } else if (f) {
          check(worksheet_write_blank(ws, row, cc, f));
        }
      }
      ++row;
    }
    worksheet_freeze_panes(ws, 1, 0);
  }
  const lxw_error e = workbook_close(wb.release());
  if (e != LXW_NO_ERROR) throw Error(path + ": cannot write the workbook: " + lxw_strerror(e));
  tmp.commit();
}

}  // namespace

std::string write_config_report(const std::vector<CheckTable>& tables, const std::string& out_dir) {
  base::make_dirs(out_dir);
  const std::vector<Row> summary = summary_rows(tables);
  std::vector<Table> written{{"summary", {"filename", "pass_check", "rows", "note"}, &summary}};
  for (const CheckTable& t : tables) {
    const std::string csv = out_dir + "/" + t.name + ".csv";
    if (t.status == "skipped") {
      std::error_code ec;
      std::filesystem::remove(csv, ec);  // a table of an earlier compare must not linger
      continue;
    }
    written.push_back({t.name, t.header, &t.rows});
  }
  for (const Table& t : written) write_csv(out_dir + "/" + t.name + ".csv", t);
  const std::string xlsx = out_dir + "/result.xlsx";
  write_xlsx(xlsx, written);
  return xlsx;
}

}  // namespace numprobe::configcheck
