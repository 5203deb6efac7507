// XLSX compare results with msprobe's row highlighting (src/compare/compare_xlsx.h).
#include "compare/compare_xlsx.h"

#include <fcntl.h>
#include <unistd.h>
#include <xlsxwriter.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>

#include "base/file_util.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

// msprobe's thresholds (mstt CompareConst, reference/msprobe.md 2.14).
constexpr double kMaxDiffRed = 1e10;
constexpr double kOneThousandInRed = 0.9, kOneThousandOutRed = 0.6, kOneThousandDiffYellow = 0.1;
constexpr double kCosineDiffYellow = 0.1;
constexpr double kMaxRelOutRed = 0.5, kMaxRelOutYellow = 0.1, kMaxRelInYellow = 0.01;
constexpr double kOrderMagnitudeYellow = 1;  // log10

// Excel's longest cell text, in characters (libxlsxwriter counts UTF-8 code points).
constexpr size_t kMaxCellChars = 32767;
// Past this many rows the zip container uses ZIP64 (sheet XML over 4 GB, e.g. with stacks); small
// files keep plain zip, which every Excel opens without a warning.
constexpr size_t kZip64Rows = 100000;

bool is_input_side(RowState s) {
  return s == RowState::kInput || s == RowState::kParameters;
}

// msprobe's check_indices_numeric: NPU max, Bench max and the max diff are all numbers.
bool numeric(const HighlightInput& r) {
  return r.npu_max && r.bench_max && r.has_max_diff;
}

// One output row against one input/parameter row (msprobe's compare rules).
void compare_rules(CompareMode mode, const HighlightInput& in, const HighlightInput& out, bool& red,
                   bool& yellow) {
  // CheckOrderMagnitude: both max diffs above 1, the output's an order of magnitude larger.
  const double din = std::fabs(in.max_diff), dout = std::fabs(out.max_diff);
  if (!(din > dout || din <= 1 || dout <= 1) &&
      std::log10(dout) - std::log10(din) >= kOrderMagnitudeYellow) {
    yellow = true;
  }
  if (mode == CompareMode::kTensor) {
    if (in.has_one_thousandth && out.has_one_thousandth) {
      if (in.one_thousandth > kOneThousandInRed && out.one_thousandth < kOneThousandOutRed) {
        red = true;
      } else if (in.one_thousandth - out.one_thousandth > kOneThousandDiffYellow) {
        yellow = true;
      }
    }
    if (in.has_cosine && out.has_cosine && in.cosine - out.cosine > kCosineDiffYellow) {
      yellow = true;
    }
  } else if (out.has_max_rel) {
    if (out.max_rel > kMaxRelOutRed) red = true;
    if (in.has_max_rel && out.max_rel > kMaxRelOutYellow && in.max_rel < kMaxRelInYellow) {
      yellow = true;
    }
  }
}

// The text of a metric cell is a plain finite decimal number (not "nan", "inf", "N/A", "1.5%").
bool plain_number(std::string_view s, double& v) {
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string_view::npos) return false;
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data(), end, v);
  return r.ec == std::errc() && r.ptr == end && std::isfinite(v);
}

// s cut to Excel's cell limit at a UTF-8 character boundary; s itself when it fits.
std::string_view fit_cell(std::string_view s) {
  if (s.size() <= kMaxCellChars) return s;
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == kMaxCellChars) {
      return s.substr(0, i);
    }
  }
  return s;
}

struct WorkbookFree {
  void operator()(lxw_workbook* wb) const { lxw_workbook_free(wb); }
};

class XlsxWriter {
 public:
  XlsxWriter(const std::string& path, const std::string& tmp, size_t rows) : path_(path) {
    tmpdir_ = std::filesystem::path(path).parent_path().string();
    if (tmpdir_.empty()) tmpdir_ = ".";
    lxw_workbook_options o{};
    o.constant_memory = LXW_TRUE;  // rows stream to temporary files; strings are written inline
    o.tmpdir = tmpdir_.data();
    o.use_zip64 = rows > kZip64Rows ? LXW_TRUE : LXW_FALSE;
    wb_.reset(workbook_new_opt(tmp.c_str(), &o));
    if (!wb_) throw Error(path_ + ": cannot start the workbook");
    red_ = fill(0xFF0000);
    yellow_ = fill(0xFFFF00);
  }

  void add_sheet(const std::string& name) {
    ws_ = workbook_add_worksheet(wb_.get(), name.c_str());
    if (!ws_) throw Error(path_ + ": cannot add sheet " + name);
  }

  void string(lxw_row_t row, lxw_col_t col, const std::string& text, lxw_format* f) {
    const char* s = text.c_str();
    if (text.size() > kMaxCellChars) {  // copy only what is cut
      std::string_view v = fit_cell(text);
      scratch_.assign(v.data(), v.size());
      s = scratch_.c_str();
    }
    check(worksheet_write_string(ws_, row, col, s, f));
  }
  void number(lxw_row_t row, lxw_col_t col, double v, lxw_format* f) {
    check(worksheet_write_number(ws_, row, col, v, f));
  }
  lxw_format* format(Highlight h) const {
    return h == Highlight::kRed ? red_ : h == Highlight::kYellow ? yellow_ : nullptr;
  }

  void close() {
    lxw_error e = workbook_close(wb_.release());
    if (e != LXW_NO_ERROR) throw Error(path_ + ": cannot write the workbook: " + lxw_strerror(e));
  }

 private:
  lxw_format* fill(lxw_color_t color) {
    lxw_format* f = workbook_add_format(wb_.get());
    format_set_pattern(f, LXW_PATTERN_SOLID);
    format_set_bg_color(f, color);
    return f;
  }
  void check(lxw_error e) const {
    if (e != LXW_NO_ERROR) throw Error(path_ + ": " + lxw_strerror(e));
  }

  std::string path_, tmpdir_, scratch_;
  std::unique_ptr<lxw_workbook, WorkbookFree> wb_;
  lxw_worksheet* ws_ = nullptr;
  lxw_format *red_ = nullptr, *yellow_ = nullptr;
};

}  // namespace

const char* highlight_name(Highlight h) {
  switch (h) {
    case Highlight::kRed:
      return "red";
    case Highlight::kYellow:
      return "yellow";
    default:
      return "";
  }
}

std::vector<Highlight> highlight_batch(CompareMode mode, const std::vector<HighlightInput>& rows) {
  std::vector<Highlight> out(rows.size(), Highlight::kNone);
  if (mode == CompareMode::kMd5) return out;  // msprobe colours nothing in md5 mode
  std::vector<char> red(rows.size(), 0), yellow(rows.size(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {  // CheckOverflow, per row
    const HighlightInput& r = rows[i];
    if (r.npu_max_min_nan_inf || (r.has_max_diff && std::fabs(r.max_diff) > kMaxDiffRed)) {
      red[i] = 1;
    }
  }
  for (size_t o = 0; o < rows.size(); ++o) {  // outputs against inputs and parameters
    if (rows[o].state != RowState::kOutput || !numeric(rows[o])) continue;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!is_input_side(rows[i].state) || !numeric(rows[i])) continue;
      bool r = false, y = false;
      compare_rules(mode, rows[i], rows[o], r, y);
      red[o] |= r;
      yellow[o] |= y;
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {  // CheckReqGradConsist, per row
    if (!rows[i].requires_grad_consistent) yellow[i] = 1;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    out[i] = red[i] ? Highlight::kRed : yellow[i] ? Highlight::kYellow : Highlight::kNone;
  }
  return out;
}

HighlightInput highlight_input(const PairResult& p, const RowResult& r) {
  HighlightInput in;
  const bool ht = r.pair.target >= 0, hg = r.pair.golden >= 0, both = ht && hg;
  const CompareRow* t = ht ? &p.target_rows[r.pair.target] : nullptr;
  const CompareRow* g = hg ? &p.golden_rows[r.pair.golden] : nullptr;
  in.state = t ? t->state : g ? g->state : RowState::kOther;
  in.requires_grad_consistent = requires_grad_consistent(p, r);
  auto number = [](const StatValue& s) { return s.has_number() && !std::isnan(s.v); };
  auto nan_inf = [](const StatValue& s) {
    return s.kind == StatKind::kFloat && !std::isfinite(s.v);
  };
  in.npu_max_min_nan_inf = t && (nan_inf(t->max) || nan_inf(t->min));
  in.npu_max = t && number(t->max);
  in.bench_max = g && number(g->max);
  switch (p.mode) {
    case CompareMode::kStatistics: {
      // Scalar arguments: the table leaves their diffs N/A; msprobe's table has them (0 for equal
      // values), and its rules judge outputs against them, so they are computed here.
      const bool scalar = both && t->kind == RowKind::kScalar;
      const StatDiff d = scalar ? statistics_metrics(*t, *g).max : row_statistics(p, r).max;
      in.has_max_diff = both && d.has_diff && !std::isnan(d.diff);
      in.max_diff = d.diff;
      in.has_max_rel = both && d.has_rel && !std::isnan(d.rel_percent);
      in.max_rel = d.rel_percent / 100;
      break;
    }
    case CompareMode::kTensor: {
      const TensorMetrics& m = r.tensor;
      in.has_max_diff = both && m.has_errors && !std::isnan(m.max_abs);
      in.max_diff = m.max_abs;
      in.has_one_thousandth = both && m.has_ratios && !std::isnan(m.one_thousandth);
      in.one_thousandth = m.one_thousandth;
      in.has_cosine = both && m.has_cosine && !std::isnan(m.cosine);
      in.cosine = m.cosine;
      break;
    }
    case CompareMode::kMd5:
      break;
  }
  return in;
}

std::vector<Highlight> highlight_rows(const PairResult& p) {
  std::vector<Highlight> out;
  out.reserve(p.rows.size());
  std::vector<HighlightInput> batch;
  int64_t key = 0;
  auto flush = [&] {
    std::vector<Highlight> h = highlight_batch(p.mode, batch);
    out.insert(out.end(), h.begin(), h.end());
    batch.clear();
  };
  for (const RowResult& r : p.rows) {
    // Target entry index; golden-only rows: a key no target entry has, distinct per golden entry.
    const int64_t k = r.pair.target >= 0
                          ? static_cast<int64_t>(p.target_rows[r.pair.target].entry)
                          : -1 - static_cast<int64_t>(p.golden_rows[r.pair.golden].entry);
    if (!batch.empty() && k != key) flush();
    key = k;
    batch.push_back(highlight_input(p, r));
  }
  if (!batch.empty()) flush();
  return out;
}

void write_compare_xlsx(const std::string& path, const PairResult& p, bool with_stack,
                        const XlsxOptions& options) {
  if (options.max_rows_per_sheet < 2 || options.max_rows_per_sheet > LXW_ROW_MAX) {
    throw Error(path + ": rows per sheet must be within 2.." + std::to_string(LXW_ROW_MAX));
  }
  const std::vector<std::string> header = compare_table_header(p, with_stack);
  if (header.size() > LXW_COL_MAX) throw Error(path + ": too many columns");
  const std::vector<Highlight> colours = highlight_rows(p);
  const size_t per_sheet = options.max_rows_per_sheet - 1;  // data rows under each header

  base::TempPath tmp(path);
  XlsxWriter x(path, tmp.tmp(), p.rows.size());
  std::vector<TableCell> cells;
  size_t sheet = 0;
  lxw_row_t row = 0;
  auto start_sheet = [&] {
    x.add_sheet(sheet == 0 ? std::string("result") : "result_" + std::to_string(sheet + 1));
    ++sheet;
    for (size_t c = 0; c < header.size(); ++c) {
      x.string(0, static_cast<lxw_col_t>(c), header[c], nullptr);
    }
    row = 1;
  };
  start_sheet();
  for (size_t i = 0; i < p.rows.size(); ++i) {
    if (i > 0 && i % per_sheet == 0) start_sheet();
    compare_table_row(p, p.rows[i], with_stack, cells);
    lxw_format* f = x.format(colours[i]);
    for (size_t c = 0; c < cells.size(); ++c) {
      double v = 0;
      const auto col = static_cast<lxw_col_t>(c);
      if (cells[c].numeric && plain_number(cells[c].text, v)) {
        x.number(row, col, v, f);
      } else {
        x.string(row, col, cells[c].text, f);  // an empty text with a fill is a blank filled cell
      }
    }
    ++row;
  }
  x.close();
  tmp.commit();
}

}  // namespace numprobe
