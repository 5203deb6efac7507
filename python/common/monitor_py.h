// The training monitor's Python surface shared by numprobe._C (the torch collector) and
// numprobe._engine (the buffer collector the MindSpore TrainerMon feeds): the config reader, the
// group ids, the name squash, and the dicts the collectors return. Header-only: the two
// extensions share no library.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "monitor/param_name.h"
#include "numprobe/error.h"
#include "numprobe/monitor/config.h"
#include "numprobe/monitor/sink.h"

namespace numprobe::python_common {

inline monitor::MetricGroup monitor_group_arg(int g) {
  if (g < 0 || g > static_cast<int>(monitor::MetricGroup::kOther))
    throw numprobe::Error("numprobe monitor: no metric group " + std::to_string(g));
  return static_cast<monitor::MetricGroup>(g);
}

inline pybind11::list monitor_anomalies_list(const std::vector<monitor::AnomalyEvent>& events) {
  pybind11::list out;
  for (const auto& e : events) {
    pybind11::dict d;
    d["rank"] = e.rank;
    d["step"] = e.step;
    d["micro_step"] = e.micro_step;
    d["call_id"] = e.call_id;
    d["tag_name"] = e.tag_name;
    d["op"] = e.op;
    d["message"] = e.message;
    out.append(d);
  }
  return out;
}

inline pybind11::dict monitor_summary_dict(const monitor::TensorSummary& s) {
  pybind11::dict d;
  for (const char* op : {"min", "max", "mean", "norm", "zeros", "nans", "infs"})
    d[op] = monitor::op_value(s, op);
  return d;
}

// The rows a collector wrote last: [{"group", "name", "micro_step", "ops": {op: value}}].
inline pybind11::list monitor_rows_list(
    const std::vector<std::pair<monitor::MetricGroup, monitor::MetricRow>>& rows,
    const monitor::MonitorConfig& config) {
  pybind11::list out;
  for (const auto& [group, row] : rows) {
    pybind11::dict d;
    d["group"] = monitor::group_name(group);
    d["name"] = row.name;
    d["micro_step"] = row.micro_step;
    pybind11::dict ops;
    for (const auto& op : config.ops) ops[op.c_str()] = monitor::op_value(row.summary, op);
    d["ops"] = ops;
    out.append(d);
  }
  return out;
}

// monitor_config_json, MONITOR_GROUPS and monitor_squash_name: the same functions in both
// bindings, so both fronts read configs and name rows alike.
inline void register_monitor_basics(pybind11::module_& m) {
  m.def(
      "monitor_config_json",
      [](const std::string& text, const std::string& source) {
        return monitor::monitor_config_json(monitor::parse_monitor_config(text, source));
      },
      "The monitor config.json text as canonical JSON (defaults filled); NumprobeError names "
      "the file and field of anything wrong or unsupported.");
  pybind11::dict groups;
  for (int g = 0; g <= static_cast<int>(monitor::MetricGroup::kOther); ++g)
    groups[monitor::group_name(static_cast<monitor::MetricGroup>(g))] = g;
  m.attr("MONITOR_GROUPS") = groups;
  m.def("monitor_squash_name", &monitor::squash_param_name, pybind11::arg("name"),
        pybind11::arg("enable") = true,
        "msprobe's squash_param_name: what follows the first recognised container (layers., "
        "embedding., final, output, norm); the name itself when none matches or not enable.");
}

}  // namespace numprobe::python_common
