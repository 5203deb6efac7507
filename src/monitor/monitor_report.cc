#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "base/json_writer.h"
#include "base/mapped_file.h"
#include "monitor/monitor_csv.h"
#include "monitor/run_dir.h"
#include "monitor/tb_events.h"
#include "numprobe/error.h"
#include "numprobe/monitor/report.h"

namespace numprobe::monitor {
namespace {

namespace fs = std::filesystem;

// CSV prefix <- tag task (sink.h group_task).
const std::pair<const char*, const char*> kTaskGroups[] = {{"actv_grad", "actv_grad"},
                                                           {"actv", "actv"},
                                                           {"pre_grad", "grad_unreduced"},
                                                           {"acc_grad", "grad_unreduced"},
                                                           {"post_grad", "grad_reduced"},
                                                           {"exp_avg_sq", "exp_avg_sq"},
                                                           {"exp_avg", "exp_avg"},
                                                           {"param_origin", "param_origin"},
                                                           {"param_updated", "param_updated"},
                                                           {"other", "other"}};
const char* const kGroups[] = {"actv",         "actv_grad",     "grad_unreduced",
                               "grad_reduced", "exp_avg",       "exp_avg_sq",
                               "param_origin", "param_updated", "other"};

using SeriesKey = std::tuple<std::string, std::string, int64_t, std::string>;

class Collector {
 public:
  void add(const std::string& group, const std::string& op, int64_t rank, const std::string& tag,
           int64_t step, double value) {
    auto [it, fresh] = index_.emplace(SeriesKey{group, op, rank, tag}, series.size());
    if (fresh) series.push_back({group, op, rank, tag, {}, {}});
    series[it->second].steps.push_back(step);
    series[it->second].values.push_back(value);
  }
  std::vector<MonitorSeries> series;

 private:
  std::map<SeriesKey, size_t> index_;
};

// "<group>_<s0>-<s1>.csv" -> group, for the known groups.
bool csv_group(const std::string& file, std::string* group) {
  for (const char* g : kGroups) {
    const std::string prefix = std::string(g) + "_";
    if (file.rfind(prefix, 0) != 0 || file.size() < prefix.size() + 4) continue;
    if (file.compare(file.size() - 4, 4, ".csv") != 0) continue;
    const std::string mid = file.substr(prefix.size(), file.size() - prefix.size() - 4);
    const size_t dash = mid.find('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == mid.size()) continue;
    if (mid.find_first_not_of("0123456789-") != std::string::npos) continue;
    *group = g;
    return true;
  }
  return false;
}

// "<name>/rank<r>/<task>_<op>" -> (group, name, op).
bool split_tb_tag(const std::string& tag, std::string* group, std::string* name, std::string* op) {
  const size_t last = tag.rfind('/');
  if (last == std::string::npos) return false;
  const size_t rank_at = tag.rfind("/rank", last - 1);
  if (rank_at == std::string::npos || last == 0) return false;
  const std::string task_op = tag.substr(last + 1);
  for (const auto& [task, g] : kTaskGroups) {
    const std::string prefix = std::string(task) + "_";
    if (task_op.rfind(prefix, 0) == 0 && task_op.size() > prefix.size()) {
      *group = g;
      *name = tag.substr(0, rank_at);
      *op = task_op.substr(prefix.size());
      return true;
    }
  }
  return false;
}

std::vector<std::string> sorted_entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    names.push_back(e.path().filename().string());
  if (ec) throw InputError(dir, "cannot list: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

void read_run(const std::string& dir, int64_t rank, Collector& c, MonitorData& data) {
  MonitorRunInfo info{dir, rank, "csv", 0};
  std::vector<std::string> events;
  for (const auto& name : sorted_entries(dir)) {
    std::string group;
    if (csv_group(name, &group)) {
      const std::string path = dir + "/" + name;
      const base::MappedFile m(path);
      const MonitorCsv csv = parse_monitor_csv(std::string_view(m.data(), m.size()), path);
      if (csv.truncated) data.truncated_files.push_back(path);
      for (const auto& row : csv.rows)
        for (size_t k = 0; k < csv.ops.size(); ++k)
          c.add(group, csv.ops[k], rank, row.tag, row.step, row.values[k]);
      ++info.files;
    } else if (name.rfind("events.out.tfevents.", 0) == 0) {
      events.push_back(dir + "/" + name);
    }
  }
  if (info.files == 0 && !events.empty()) {
    // A TensorBoard run (format: tensorboard): the same series, read from the events.
    info.format = "tensorboard";
    for (const auto& path : events) {
      for (const auto& e : read_event_file(path).scalars) {
        std::string group, name, op;
        if (split_tb_tag(e.tag, &group, &name, &op)) c.add(group, op, rank, name, e.step, e.value);
      }
      ++info.files;
    }
  }
  if (info.files > 0) data.runs.push_back(info);
}

// JSON text safe inside <script>: no '<', '>' or '&' left to end the element or start markup.
std::string script_safe_json(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '<')
      out += "\\u003c";
    else if (ch == '>')
      out += "\\u003e";
    else if (ch == '&')
      out += "\\u0026";
    else
      out += ch;
  }
  return out;
}

// Embedded asset text with every "</tag" of the given element kind broken ("<\/script" reads
// the same inside JS strings and regular expressions).
std::string inert_closing(std::string_view text, const std::string& tag) {
  std::string out(text);
  for (size_t at = 0; (at = out.find("</", at)) != std::string::npos; at += 2) {
    std::string next = out.substr(at + 2, tag.size());
    std::transform(next.begin(), next.end(), next.begin(), ::tolower);
    if (next == tag) out.insert(at + 1, "\\");
  }
  return out;
}

// The page's data: {"anomalies":[...],"runs":[...],"series":[...]}, compact (base/json_writer.h).
// Every object's keys are written in sorted order, as they always have been.
std::string report_json(const MonitorData& data) {
  std::string out;
  base::JsonWriter w(out);
  auto str = [&](const char* key, const std::string& v) {
    w.key(key);
    w.string_value(v);
  };
  auto integer = [&](const char* key, int64_t v) {
    w.key(key);
    w.int_value(v);
  };
  w.begin_object();
  w.key("anomalies");
  w.begin_array();
  for (const auto& a : data.anomalies) {
    std::string group, name, op;
    // tag_name "<name>/rank<r>/<task>": reuse the TensorBoard split with a placeholder op.
    split_tb_tag(a.tag_name + "_x", &group, &name, &op);
    w.begin_object();
    integer("call_id", a.call_id);
    str("group", group);
    str("message", a.message);
    integer("micro_step", a.micro_step);
    integer("rank", a.rank);
    integer("step", a.step);
    str("tag", name);
    str("tag_name", a.tag_name);
    w.end_object();
  }
  w.end_array();
  w.key("runs");
  w.begin_array();
  for (const auto& r : data.runs) {
    w.begin_object();
    str("dir", r.dir);
    integer("files", static_cast<int64_t>(r.files));
    str("format", r.format);
    integer("rank", r.rank);
    w.end_object();
  }
  w.end_array();
  w.key("series");
  w.begin_array();
  for (const auto& s : data.series) {
    w.begin_object();
    str("group", s.group);
    str("op", s.op);
    integer("rank", s.rank);
    str("tag", s.tag);
    w.key("x");
    w.int_array(s.steps);
    w.key("y");
    w.begin_array();
    for (double v : s.values) w.float_value(v);  // NaN and Inf as null
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

}  // namespace

MonitorData read_monitor_output(const std::string& base) {
  std::error_code ec;
  if (!fs::is_directory(base, ec)) throw InputError(base, "not a directory");
  MonitorData data;
  Collector c;
  for (const auto& name : sorted_entries(base)) {
    std::string tag;
    int64_t rank;
    const std::string dir = base + "/" + name;
    if (!parse_run_dir_name(name, &tag, &rank) || !fs::is_directory(dir, ec)) continue;
    read_run(dir, rank, c, data);
  }
  if (fs::is_directory(base + "/anomaly_detected", ec)) {
    AnomalyFiles files = load_anomaly_files(base);
    data.anomalies = std::move(files.records);
    data.anomaly_files = std::move(files.files);
  }
  if (data.runs.empty())
    throw InputError(base,
                     "no monitor run directory (<time>-rank<r>-<id>) with CSV or TensorBoard "
                     "event files");
  data.series = std::move(c.series);
  return data;
}

std::string render_monitor_report(const MonitorData& data, const ReportAssets& assets) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>numprobe monitor report</title>\n<style>\n";
  html += inert_closing(assets.uplot_css, "style");
  html += "\n</style>\n<style>\n";
  html += inert_closing(assets.report_css, "style");
  html +=
      "\n</style>\n</head>\n<body>\n<header><h1>numprobe monitor report</h1>"
      "<label>rank <select id=\"rank\"></select></label>"
      "<label>tag filter <input id=\"filter\" type=\"search\" placeholder=\"substring\"></label>"
      "</header>\n<p id=\"summary\"></p>\n<div id=\"charts\"></div>\n"
      "<h2>Anomalies</h2>\n<table id=\"anomalies\"><thead><tr><th>rank</th><th>step</th>"
      "<th>micro_step</th><th>call_id</th><th>tag</th><th>message</th></tr></thead><tbody></tbody>"
      "</table>\n<script type=\"application/json\" id=\"monitor-data\">";
  html += script_safe_json(report_json(data));
  html += "</script>\n<script>\n";
  html += inert_closing(assets.uplot_js, "script");
  html += "\n</script>\n<script>\n";
  html += inert_closing(assets.report_js, "script");
  html += "\n</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace numprobe::monitor
