#include "ckpt/ckpt_report.h"

#include "base/csv.h"
#include "base/file_util.h"
#include "base/json_writer.h"

namespace numprobe::ckpt {
namespace {

void optional_float(base::JsonWriter& w, const std::optional<double>& v) {
  if (v)
    w.float_value(*v);
  else
    w.null_value();
}

void shape_value(base::JsonWriter& w, const std::vector<int64_t>& s) {
  w.begin_array();
  for (int64_t d : s) w.int_value(d);
  w.end_array();
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::string float_text(const std::optional<double>& v) {
  std::string s;
  if (v) base::append_py_float(s, *v);
  return s;
}

}  // namespace

std::string render_json(const CkptCompareResult& r) {
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(4));
  w.begin_object();
  for (const ParamResult& p : r.params) {
    w.key(p.name);
    w.begin_object();
    w.key("l2");
    optional_float(w, p.l2);
    w.key("cos");
    optional_float(w, p.cos);
    // One side only: that side's numel and shape; differing sides: [a, b] as msprobe writes.
    const bool same = p.only_in || (p.numel_a == p.numel_b && p.shape_a == p.shape_b);
    w.key("numel");
    if (same) {
      w.int_value(static_cast<int64_t>(p.only_in == 'b' ? p.numel_b : p.numel_a));
    } else {
      w.begin_array();
      w.int_value(static_cast<int64_t>(p.numel_a));
      w.int_value(static_cast<int64_t>(p.numel_b));
      w.end_array();
    }
    w.key("shape");
    if (same) {
      shape_value(w, p.only_in == 'b' ? p.shape_b : p.shape_a);
    } else {
      w.begin_array();
      shape_value(w, p.shape_a);
      shape_value(w, p.shape_b);
      w.end_array();
    }
    w.key("max_abs_err");
    optional_float(w, p.max_abs);
    w.key("max_rel_err");
    optional_float(w, p.max_rel);
    w.key("dtype");
    if (p.only_in || p.dtype_a == p.dtype_b) {
      w.string_value(p.only_in == 'b' ? p.dtype_b : p.dtype_a);
    } else {
      w.begin_array();
      w.string_value(p.dtype_a);
      w.string_value(p.dtype_b);
      w.end_array();
    }
    w.key("status");
    w.string_value(status_name(p.status));
    if (!p.reason.empty()) {
      w.key("reason");
      w.string_value(p.reason);
    }
    if (p.only_in) {
      w.key("only_in");
      w.string_value(std::string(1, p.only_in));
    }
    w.end_object();
  }
  w.end_object();
  out += '\n';
  return out;
}

std::string render_csv(const CkptCompareResult& r) {
  std::string out =
      "name,status,reason,l2,cos,max_abs_err,max_rel_err,numel_a,numel_b,shape_a,shape_b,dtype_a,"
      "dtype_b\n";
  for (const ParamResult& p : r.params) {
    std::string line;
    // Names and reasons come from the files: guard them against spreadsheet formulas.
    const std::string name = csv_starts_like_formula(p.name) ? "'" + p.name : p.name;
    csv_append_cell(line, name);
    csv_append_cell(line, status_name(p.status));
    csv_append_cell(line, csv_starts_like_formula(p.reason) ? "'" + p.reason : p.reason);
    for (const auto& v : {p.l2, p.cos, p.max_abs, p.max_rel}) csv_append_cell(line, float_text(v));
    csv_append_cell(line, p.only_in == 'b' ? "" : std::to_string(p.numel_a));
    csv_append_cell(line, p.only_in == 'a' ? "" : std::to_string(p.numel_b));
    csv_append_cell(line, p.only_in == 'b' ? "" : shape_text(p.shape_a));
    csv_append_cell(line, p.only_in == 'a' ? "" : shape_text(p.shape_b));
    csv_append_cell(line, p.dtype_a);
    csv_append_cell(line, p.dtype_b);
    out += line + "\n";
  }
  return out;
}

std::string csv_path_for(const std::string& json_path) {
  const std::string ext = ".json";
  if (json_path.size() > ext.size() &&
      json_path.compare(json_path.size() - ext.size(), ext.size(), ext) == 0)
    return json_path.substr(0, json_path.size() - ext.size()) + ".csv";
  return json_path + ".csv";
}

void write_reports(const CkptCompareResult& r, const std::string& json_path, bool csv) {
  // Both rendered before either is written: an error leaves neither file half made.
  const std::string json = render_json(r);
  const std::string table = csv ? render_csv(r) : std::string();
  base::write_file_atomic(json_path, json);
  if (csv) base::write_file_atomic(csv_path_for(json_path), table);
}

}  // namespace numprobe::ckpt
