#include "monitor/monitor_csv.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "base/csv.h"
#include "numprobe/error.h"

namespace numprobe::monitor {
namespace {

bool parse_int(const std::string& s, int64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_value(const std::string& s, double* v) {
  if (s == "nan" || s == "NaN" || s == "-nan") {
    *v = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "inf" || s == "-inf") {
    *v = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

MonitorCsv parse_monitor_csv(std::string_view text, const std::string& source) {
  bool truncated = false;
  if (!text.empty() && text.back() != '\n') {
    const size_t last = text.rfind('\n');
    if (last != std::string_view::npos) {  // a header alone without newline stays an error below
      text = text.substr(0, last + 1);
      truncated = true;
    }
  }
  const auto table = csv_parse(text, source);
  auto fail = [&](size_t line, const std::string& what) -> InputError {
    return InputError(source, "line " + std::to_string(line) + ": " + what);
  };
  if (table.empty()) throw InputError(source, "empty monitor CSV (no header)");
  const auto& header = table[0];
  if (header.size() < 3 || header[0] != "vpp_stage" || header[1] != "name" || header[2] != "step")
    throw fail(1, "header must start with vpp_stage,name,step");
  MonitorCsv out;
  out.truncated = truncated;
  out.micro_step = header.size() > 3 && header[3] == "micro_step";
  std::vector<size_t> op_columns;
  for (size_t c = out.micro_step ? 4 : 3; c < header.size(); ++c) {
    if (header[c] == "shape" || header[c] == "dtype" || header[c] == "id") continue;
    if (header[c].empty()) throw fail(1, "empty column name");
    out.ops.push_back(header[c]);
    op_columns.push_back(c);
  }
  for (size_t i = 1; i < table.size(); ++i) {
    const auto& row = table[i];
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    if (row.size() != header.size())
      throw fail(i + 1, std::to_string(row.size()) + " cells, the header has " +
                            std::to_string(header.size()));
    MonitorCsv::Row r;
    if (!parse_int(row[2], &r.step)) throw fail(i + 1, "step '" + row[2] + "' is not an integer");
    r.tag = row[0] + ":" + row[1];
    if (out.micro_step) {
      int64_t micro;
      if (!parse_int(row[3], &micro))
        throw fail(i + 1, "micro_step '" + row[3] + "' is not an integer");
      r.tag += ":" + row[3];
    }
    for (size_t c : op_columns) {
      double v;
      if (!parse_value(row[c], &v))
        throw fail(i + 1, header[c] + " '" + row[c] + "' is not a number");
      r.values.push_back(v);
    }
    out.rows.push_back(std::move(r));
  }
  return out;
}

}  // namespace numprobe::monitor
