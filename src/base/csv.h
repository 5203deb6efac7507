// CSV as numprobe writes and reads it: RFC 4180 quoting, and the spreadsheet formula guard that
// keeps a cell starting with = + - @ % (or their full-width forms), tab or CR from running.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace numprobe {

// Text a spreadsheet would run as a formula.
bool csv_starts_like_formula(std::string_view v);
// Appends one cell (a ',' first unless the line is empty), quoted when it holds , " CR or LF.
// The text is written as given: apply the formula guard before where the cell is free text.
void csv_append_cell(std::string& line, std::string_view v);
// Parses RFC 4180 text into rows of cells. A quote left open is an InputError naming file.
std::vector<std::vector<std::string>> csv_parse(std::string_view text, const std::string& file);

}  // namespace numprobe
