#include "base/csv.h"

#include "numprobe/error.h"

namespace numprobe {

bool csv_starts_like_formula(std::string_view v) {
  if (v.empty()) return false;
  switch (v[0]) {
    case '=':
    case '+':
    case '-':
    case '@':
    case '%':
    case '\t':
    case '\r':
      return true;
    default:
      break;
  }
  // U+FF1D, U+FF0B, U+FF0D, U+FF20, U+FF05 in UTF-8.
  if (v.size() >= 3 && v[0] == '\xef' && v[1] == '\xbc') {
    const unsigned char c = static_cast<unsigned char>(v[2]);
    return c == 0x9d || c == 0x8b || c == 0x8d || c == 0xa0 || c == 0x85;
  }
  return false;
}

void csv_append_cell(std::string& line, std::string_view v) {
  if (!line.empty() && line.back() != '\n') line += ',';
  if (v.find_first_of(",\"\n\r") == std::string_view::npos) {
    line.append(v.data(), v.size());
    return;
  }
  line += '"';
  size_t from = 0;
  for (size_t q = v.find('"'); q != std::string_view::npos; q = v.find('"', q + 1)) {
    line.append(v.data() + from, q + 1 - from);
    line += '"';
    from = q + 1;
  }
  line.append(v.data() + from, v.size() - from);
  line += '"';
}

std::vector<std::vector<std::string>> csv_parse(std::string_view text, const std::string& file) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  size_t quote_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch != '"') {
        cell += ch;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else {
        quoted = false;
      }
      continue;
    }
    if (ch == '"') {
      quoted = true;
      quote_start = i;
      any = true;
    } else if (ch == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !cell.empty()) {
        row.push_back(std::move(cell));
        rows.push_back(std::move(row));
      }
      row.clear();
      cell.clear();
      any = false;
    } else {
      cell += ch;
    }
  }
  if (quoted)
    throw InputError(file, "a quoted cell is never closed", static_cast<int64_t>(quote_start));
  if (any || !cell.empty()) {
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace numprobe
