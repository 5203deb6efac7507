// `numprobe compare --xlsx`: the compare table as an XLSX workbook, with msprobe's row highlighting
// (reference/msprobe.md 2.9, mstt core/compare/highlight.py) and its NaN bug fixed.
//
// Rows are judged per API batch (the rows of one dump entry). Red beats yellow.
//  - red, any row: NPU max or min is NaN, +Inf or -Inf (msprobe misses NaN: it stores "Nan" and
//    looks for "nan"); |Max diff| (statistics) or |MaxAbsErr| (tensor) > 1e10.
//  - each output row against each input/parameter row of its batch, both with numeric NPU max,
//    Bench max and Max diff/MaxAbsErr:
//      yellow: both |max diffs| > 1, the output's at least 10x the input's;
//      tensor: input One Thousandth Err Ratio > 0.9 and output < 0.6 -> red, else a drop of more
//        than 0.1 -> yellow; a cosine drop of more than 0.1 -> yellow;
//      statistics: output MaxRelativeErr > 0.5 (50 %) -> red; output > 0.1 while input < 0.01
//        -> yellow. Scalar arguments count with their value's difference (0 when equal), as in
//        msprobe's table, although numprobe's table leaves their diffs N/A.
//  - yellow, any row: Requires_grad Consistent is False (this includes unmatched rows).
//  - md5 mode: no highlighting (as msprobe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numprobe/compare.h"

namespace numprobe {

enum class Highlight : uint8_t { kNone, kYellow, kRed };
const char* highlight_name(Highlight h);  // "", "yellow", "red"

// What the rules read from one row. "has_*" false: the cell is not a number (N/A, None, nan).
struct HighlightInput {
  RowState state = RowState::kOther;        // inputs and parameters vs outputs
  bool npu_max_min_nan_inf = false;         // NPU max or NPU min is NaN, +Inf or -Inf
  bool npu_max = false, bench_max = false;  // NPU max / Bench max are numbers
  bool has_max_diff = false;
  double max_diff = 0;  // statistics: Max diff; tensor: MaxAbsErr
  bool has_max_rel = false;
  double max_rel = 0;  // statistics: MaxRelativeErr as a fraction (12 % -> 0.12)
  bool has_one_thousandth = false;
  double one_thousandth = 0;  // tensor: One Thousandth Err Ratio
  bool has_cosine = false;
  double cosine = 0;  // tensor
  bool requires_grad_consistent = true;
};

// The colours of the rows of one API batch.
std::vector<Highlight> highlight_batch(CompareMode mode, const std::vector<HighlightInput>& rows);
// The rule inputs of one result row.
HighlightInput highlight_input(const PairResult& p, const RowResult& r);
// The colour of every row of p: batches are runs of rows of the same target entry (a golden-only
// row is a batch of its own; it has no NPU values, so only the requires_grad rule applies).
std::vector<Highlight> highlight_rows(const PairResult& p);

struct XlsxOptions {
  // Rows per sheet including the header row (Excel's maximum by default). Rows past it continue
  // on sheets "result_2", "result_3", ... each starting with the header; the first is "result".
  size_t max_rows_per_sheet = 1048576;
};

// Writes compare_table_header/compare_table_row of p to path (atomically: path.tmp, then renamed).
// Cells are the CSV's texts: a metric cell holding a plain finite number is written as a number,
// everything else as a string (never a formula). Numbers carry 16 significant digits
// (libxlsxwriter's "%.16G"), strings at most 32,767 characters (Excel's cell limit; longer ones,
// such as a very deep NPU_Stack_Info, are cut). Highlighted rows are filled in every cell with
// msprobe's colours (FFFF0000 red, FFFF00 yellow). Throws Error naming the file.
void write_compare_xlsx(const std::string& path, const PairResult& p, bool with_stack,
                        const XlsxOptions& options = {});

}  // namespace numprobe
