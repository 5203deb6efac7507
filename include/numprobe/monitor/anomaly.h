// The monitor's anomaly files: <base>/anomaly_detected/rank<r>/anomaly.json as the metric sink
// writes them (msprobe's GradAnomalyData layout), and their analysis (msprobe's
// `python -m msprobe.core.monitor.anomaly_processor -d <dir>`): the earliest anomalies first,
// written to anomaly_analyse.json. Formats: docs/monitor.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::monitor {

// One entry of anomaly.json, fields in msprobe's order.
struct AnomalyRecord {
  int64_t rank = 0;
  int64_t step = 0;
  int64_t micro_step = 0;
  int64_t pp_stage = 0;
  int64_t vpp_stage = 0;
  int64_t call_id = 0;
  std::string tag_name;  // "<name>/rank<r>/<task>"
  std::string message;
  std::vector<int64_t> group_mates;
};

// msprobe's train stage of a tag's task: 0 forward (actv), 1 backward (actv_grad, pre_grad,
// post_grad, acc_grad), 2 optimizer (exp_avg, exp_avg_sq), -1 anything else.
int train_stage(const std::string& tag_name);
// msprobe's GradAnomalyData.__lt__: (step, micro_step, train stage, vpp and pp stage - ascending
// in the forward stage, descending otherwise -, call_id); numprobe adds rank as the last key so
// the order does not depend on the order the rank files are listed in.
bool anomaly_before(const AnomalyRecord& a, const AnomalyRecord& b);
// "<tag_name>_step_<step>_call_<call_id>": the record's key in the JSON files.
std::string anomaly_key(const AnomalyRecord& a);

// The records as msprobe's json.dump(indent=1) of {key: record} writes them. Records with the same
// key replace the earlier value in place (a Python dict update).
std::string anomaly_json(const std::vector<AnomalyRecord>& records);
// Reads one anomaly.json; anything that is not an object of records is an InputError naming
// source.
std::vector<AnomalyRecord> parse_anomaly_json(std::string_view text, const std::string& source);

struct AnomalyFiles {
  std::string dir;                 // the anomaly_detected directory read
  std::vector<std::string> files;  // every rank*/anomaly.json read, sorted
  std::vector<AnomalyRecord> records;
};
// Reads every rank*/anomaly.json under dir, which is either a monitor output base (holding
// anomaly_detected/) or the anomaly_detected directory itself. No file at all is not an error
// (files is empty); an unreadable one is.
AnomalyFiles load_anomaly_files(const std::string& dir);

// The k earliest records (anomaly_before), of the given steps only when steps is not empty.
std::vector<AnomalyRecord> top_anomalies(std::vector<AnomalyRecord> records, size_t k,
                                         const std::vector<int64_t>& steps);
// Writes anomaly_json(records) to <out_dir>/anomaly_analyse.json (replaced atomically); returns
// the path.
std::string write_anomaly_analyse(const std::vector<AnomalyRecord>& records,
                                  const std::string& out_dir);
// msprobe's -s argument: a Python list literal of integers ("[1, 2]", "[]"); InputError otherwise.
std::vector<int64_t> parse_step_list(const std::string& text);

}  // namespace numprobe::monitor
