#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <unordered_map>

#include "base/file_util.h"
#include "base/json_tree.h"
#include "base/json_writer.h"
#include "base/mapped_file.h"
#include "numprobe/error.h"
#include "numprobe/monitor/anomaly.h"

namespace numprobe::monitor {
namespace {

namespace fs = std::filesystem;

bool is_dir(const std::string& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The tree keeps the files' key order: the anomalies' order (ties sort stably in file order).
using base::Json;

// Strict JSON; a key twice keeps the first position and the last value (Python's dict).
Json parse_strict(std::string_view text, const std::string& source) {
  base::JsonReadOptions options;
  options.strict = true;
  options.syntax_label = "not valid JSON";
  return base::parse_json(text, source, options);
}

int64_t int_field(const Json& v, const std::string& key, const std::string& source) {
  if (!v.is_int())
    throw InputError(source, "anomaly field '" + key + "' must be an integer",
                     static_cast<int64_t>(v.offset));
  if (!v.fits_int64)
    throw InputError(source, "anomaly field '" + key + "': " + v.text + " is out of range",
                     static_cast<int64_t>(v.offset));
  return v.integer;
}

AnomalyRecord parse_record(const std::string& key, const Json& v, const std::string& source) {
  if (!v.is_object()) throw InputError(source, "anomaly '" + key + "' must be an object");
  AnomalyRecord r;
  for (const auto& [k, x] : v.fields) {
    if (k == "rank")
      r.rank = int_field(x, k, source);
    else if (k == "step")
      r.step = int_field(x, k, source);
    else if (k == "micro_step")
      r.micro_step = int_field(x, k, source);
    else if (k == "pp_stage")
      r.pp_stage = int_field(x, k, source);
    else if (k == "vpp_stage")
      r.vpp_stage = int_field(x, k, source);
    else if (k == "call_id")
      r.call_id = int_field(x, k, source);
    else if (k == "tag_name" || k == "message") {
      if (!x.is_string() && !x.is_null())
        throw InputError(source, "anomaly field '" + k + "' must be a string");
      (k == "tag_name" ? r.tag_name : r.message) = x.text;  // null: ""
    } else if (k == "group_mates") {
      if (x.is_null()) continue;
      if (!x.is_array()) throw InputError(source, "anomaly field 'group_mates' must be a list");
      for (const auto& m : x.items) r.group_mates.push_back(int_field(m, k, source));
    } else {
      throw InputError(source, "anomaly '" + key + "' has an unknown field '" + k + "'");
    }
  }
  return r;
}

}  // namespace

int train_stage(const std::string& tag_name) {
  const std::string task = tag_name.substr(tag_name.rfind('/') + 1);
  if (task == "actv") return 0;
  if (task == "actv_grad" || task == "pre_grad" || task == "post_grad" || task == "acc_grad")
    return 1;
  if (task == "exp_avg" || task == "exp_avg_sq") return 2;
  // msprobe gives every other task -1 (before the forward). Right for param_origin (the weights
  // the forward used), wrong for param_updated: those are the update's result, so a NaN the
  // forward produced would be named at the parameters it later reached. numprobe orders them
  // after the optimizer (docs/monitor.md, "monitor-analyse").
  if (task == "param_updated") return 3;
  // numprobe's rows of the group other (sign agreement, Adam update/ratio, collectives) are read
  // at the optimizer step or carry a value from another rank: never the origin of a step's fault
  // when a forward or backward row of the same step shows it too.
  if (task == "other") return 2;
  return -1;
}

bool anomaly_before(const AnomalyRecord& a, const AnomalyRecord& b) {
  const int sa = train_stage(a.tag_name), sb = train_stage(b.tag_name);
  // msprobe picks the vpp/pp direction from the left operand's stage; the stages are compared
  // first, so the direction only matters when both are the same.
  const int64_t dir = sa == 0 ? 1 : -1;
  return std::make_tuple(a.step, a.micro_step, sa, dir * a.vpp_stage, dir * a.pp_stage, a.call_id,
                         a.rank) < std::make_tuple(b.step, b.micro_step, sb, dir * b.vpp_stage,
                                                   dir * b.pp_stage, b.call_id, b.rank);
}

std::string anomaly_key(const AnomalyRecord& a) {
  return a.tag_name + "_step_" + std::to_string(a.step) + "_call_" + std::to_string(a.call_id);
}

std::string anomaly_json(const std::vector<AnomalyRecord>& records) {
  // A dict update keeps the first position of a key and the last value.
  std::vector<std::string> keys;
  std::vector<const AnomalyRecord*> values;
  std::unordered_map<std::string, size_t> index;
  for (const auto& r : records) {
    std::string k = anomaly_key(r);
    const auto [it, fresh] = index.emplace(k, keys.size());
    if (fresh) {
      keys.push_back(std::move(k));
      values.push_back(&r);
    } else {
      values[it->second] = &r;
    }
  }
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(1));
  w.begin_object();
  for (size_t i = 0; i < keys.size(); ++i) {
    const AnomalyRecord& r = *values[i];
    w.key(keys[i]);
    w.begin_object();
    w.key("rank");
    w.int_value(r.rank);
    w.key("step");
    w.int_value(r.step);
    w.key("micro_step");
    w.int_value(r.micro_step);
    w.key("pp_stage");
    w.int_value(r.pp_stage);
    w.key("vpp_stage");
    w.int_value(r.vpp_stage);
    w.key("call_id");
    w.int_value(r.call_id);
    w.key("tag_name");
    w.string_value(r.tag_name);
    w.key("message");
    w.string_value(r.message);
    w.key("group_mates");
    w.begin_array();
    for (int64_t m : r.group_mates) w.int_value(m);
    w.end_array();
    w.end_object();
  }
  w.end_object();
  return out;
}

std::vector<AnomalyRecord> parse_anomaly_json(std::string_view text, const std::string& source) {
  const Json doc = parse_strict(text, source);
  if (!doc.is_object()) throw InputError(source, "anomaly file must hold a JSON object");
  std::vector<AnomalyRecord> out;
  for (const auto& [k, v] : doc.fields) out.push_back(parse_record(k, v, source));
  return out;
}

AnomalyFiles load_anomaly_files(const std::string& dir) {
  AnomalyFiles out;
  out.dir = is_dir(dir + "/anomaly_detected") ? dir + "/anomaly_detected" : dir;
  if (!is_dir(out.dir)) throw InputError(dir, "not a directory");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank", 0) != 0 || !is_dir(e.path().string())) continue;
    const std::string file = e.path().string() + "/anomaly.json";
    if (base::file_exists(file)) out.files.push_back(file);
  }
  if (ec) throw InputError(out.dir, "cannot list: " + ec.message());
  std::sort(out.files.begin(), out.files.end());
  for (const auto& file : out.files) {
    const base::MappedFile m(file);
    auto records = parse_anomaly_json(std::string_view(m.data(), m.size()), file);
    out.records.insert(out.records.end(), records.begin(), records.end());
  }
  return out;
}

std::vector<AnomalyRecord> top_anomalies(std::vector<AnomalyRecord> records, size_t k,
                                         const std::vector<int64_t>& steps) {
  if (!steps.empty()) {
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const AnomalyRecord& r) {
                                   return std::find(steps.begin(), steps.end(), r.step) ==
                                          steps.end();
                                 }),
                  records.end());
  }
  std::stable_sort(records.begin(), records.end(), anomaly_before);
  if (records.size() > k) records.resize(k);
  return records;
}

std::string write_anomaly_analyse(const std::vector<AnomalyRecord>& records,
                                  const std::string& out_dir) {
  base::make_dirs(out_dir);
  const std::string path = out_dir + "/anomaly_analyse.json";
  base::write_file_atomic(path, anomaly_json(records));
  return path;
}

std::vector<int64_t> parse_step_list(const std::string& text) {
  Json v;
  try {
    v = parse_strict(text, "-s");
  } catch (const InputError&) {
    throw InputError("-s", "'" + text + "' is not a list of steps such as [1, 2]");
  }
  if (!v.is_array()) throw InputError("-s", "'" + text + "' is not a list of steps such as [1, 2]");
  std::vector<int64_t> steps;
  for (const auto& s : v.items) {
    if (!s.is_int()) throw InputError("-s", "'" + text + "': steps must be integers");
    if (!s.fits_int64)
      throw InputError("-s", "'" + text + "': step " + s.text + " is out of range");
    steps.push_back(s.integer);
  }
  return steps;
}

}  // namespace numprobe::monitor
