// The hyperparameters check (docs/config_check.md): names matched exactly, through the alias table,
// then by spelling similarity (difflib ratio > 0.8), as msprobe matches them.
#include <algorithm>
#include <cctype>

#include "config_check/config_compare.h"
#include "config_check/sequence_ratio.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

struct Alias {
  const char* canonical;
  std::vector<const char*> others;
};
// The alias table (docs/config_check.md lists it).
const std::vector<Alias>& aliases() {
  static const std::vector<Alias> table = {
      {"learning_rate", {"lr", "learningrate", "base_lr", "max_lr"}},
      {"min_learning_rate", {"min_lr"}},
      {"micro_batch_size",
       {"mbs", "micro_batch", "per_device_train_batch_size", "train_micro_batch_size_per_gpu",
        "batch_size_per_gpu", "batch_size", "bs"}},
      {"global_batch_size", {"gbs", "train_batch_size", "total_batch_size"}},
      {"seq_length",
       {"seq_len", "max_seq_len", "max_seq_length", "sequence_length", "block_size", "max_length",
        "cutoff_len"}},
      {"tensor_model_parallel_size", {"tp", "tp_size", "tensor_parallel_size", "tensor_parallel"}},
      {"pipeline_model_parallel_size", {"pp", "pp_size", "pipeline_parallel_size"}},
      {"context_parallel_size", {"cp", "cp_size"}},
      {"expert_model_parallel_size", {"ep", "ep_size", "expert_parallel_size"}},
      {"sequence_parallel", {"sp"}},
      {"epochs", {"num_epochs", "max_epochs", "epoch", "num_train_epochs"}},
      {"train_iters", {"max_steps", "train_steps", "iterations", "max_iters"}},
      {"weight_decay", {"wd", "weightdecay"}},
      {"dropout", {"dropout_rate", "drop_rate", "hidden_dropout"}},
      {"gradient_accumulation_steps",
       {"grad_accum", "accumulate_grad_batches", "gradient_accumulation"}},
      {"clip_grad", {"max_grad_norm", "grad_clip", "gradient_clipping"}},
      {"lr_warmup_iters", {"warmup_steps", "lr_warmup_steps", "num_warmup_steps"}},
      {"seed", {"random_seed", "manual_seed"}},
      {"compute_dtype", {"bf16", "fp16", "fp32", "dtype", "precision", "mixed_precision"}},
      {"residual_dtype", {"fp32_residual_connection"}},
      {"softmax_compute_dtype", {"attention_softmax_in_fp32"}},
  };
  return table;
}

const char* canonical(const std::string& key) {
  for (const Alias& a : aliases()) {
    if (key == a.canonical) return a.canonical;
    for (const char* o : a.others)
      if (key == o) return a.canonical;
  }
  return nullptr;
}

// The last dotted part, `-` as `_`, lower case.
std::string key_of(const std::string& name) {
  std::string k = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  for (char& ch : k)
    ch = ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return k;
}

// Python dict semantics: a key seen again keeps its first place and takes the new name.
using Keyed = std::vector<std::pair<std::string, std::string>>;  // key -> original name
Keyed keyed(const Json& params) {
  Keyed out;
  for (const auto& f : params.fields) {
    const std::string k = key_of(f.first);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == k; });
    if (it == out.end())
      out.emplace_back(k, f.first);
    else
      it->second = f.first;
  }
  return out;
}

// Python's `_text(value)` then `!=`: numbers compare as their text, strings as strings, the rest
// as Python values (compared here by their repr).
std::string comparable(const Json& v) {
  if (v.kind == Json::kNumber || v.kind == Json::kString) return "s:" + v.text;
  return "r:" + v.python_repr();
}

std::pair<Keyed::iterator, std::string> match(const std::string& key, Keyed& candidates) {
  auto exact = std::find_if(candidates.begin(), candidates.end(),
                            [&](const auto& e) { return e.first == key; });
  if (exact != candidates.end()) return {exact, "pure name"};
  if (const char* c = canonical(key)) {
    for (auto it = candidates.begin(); it != candidates.end(); ++it) {
      const char* other = canonical(it->first);
      if (other && std::string(other) == c) return {it, "mapping"};
    }
  }
  auto best = candidates.end();
  double best_ratio = 0.8;
  for (auto it = candidates.begin(); it != candidates.end(); ++it) {
    const double r = sequence_ratio(key, it->first);
    if (r > best_ratio) {
      best = it;
      best_ratio = r;
    }
  }
  if (best == candidates.end()) return {best, ""};
  char buf[32];
  snprintf(buf, sizeof buf, "similarity:%.2f", best_ratio);
  return {best, buf};
}

void compare_file(const Json& bench, const Json& cmp, const std::string& file,
                  std::vector<Row>& out) {
  const Keyed bench_keys = keyed(bench);
  Keyed cmp_keys = keyed(cmp);
  std::vector<Row> rows;
  for (const auto& [key, bench_name] : bench_keys) {
    const Json& bv = *bench.find(bench_name);
    auto [it, how] = match(key, cmp_keys);
    if (it == cmp_keys.end()) {
      rows.push_back({Cell::str(file), Cell::str(bench_name), Cell::str("Only in benchmark"),
                      Cell::str(bv.python_str()), Cell::str(""), Cell::str(""),
                      Cell::str("warning")});
      continue;
    }
    const std::string cmp_name = it->second;
    cmp_keys.erase(it);
    const Json& cv = *cmp.find(cmp_name);
    if (comparable(bv) != comparable(cv))
      rows.push_back({Cell::str(file), Cell::str(bench_name), Cell::str(cmp_name),
                      Cell::str(bv.python_str()), Cell::str(cv.python_str()), Cell::str(how),
                      Cell::str("error")});
  }
  for (const auto& [key, cmp_name] : cmp_keys)
    rows.push_back({Cell::str(file), Cell::str("Only in comparison"), Cell::str(cmp_name),
                    Cell::str(""), Cell::str(cmp.find(cmp_name)->python_str()), Cell::str(""),
                    Cell::str("warning")});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const bool ea = a[6].text == "error", eb = b[6].text == "error";
    if (ea != eb) return ea;
    if (a[1].text != b[1].text) return a[1].text < b[1].text;
    return a[2].text < b[2].text;
  });
  out.insert(out.end(), rows.begin(), rows.end());
}

Json object_member(const Pack& pack, const std::string& member) {
  Json j = parse_member_json(pack.member(member), pack.path(), member);
  if (j.kind != Json::kObject)
    throw InputError(pack.path(), "member " + member + " is not a JSON object");
  return j;
}

}  // namespace

CheckTable compare_hyperparameters(const Pack& bench, const Pack& cmp) {
  CheckTable t{
      "hyperparameters",
      {"file_name", "bench_para", "cmp_para", "bench_value", "cmp_value", "matched_with", "level"},
      {},
      "",
      ""};
  for (const char* file : {"hyperparameters_static.json", "hyperparameters_dynamic.json"}) {
    const std::string member = std::string("hyperparameters/") + file;
    if (bench.has(member) && cmp.has(member))
      compare_file(object_member(bench, member), object_member(cmp, member), file, t.rows);
  }
  t.status = level_status_of(t.rows, 6);
  return t;
}

}  // namespace numprobe::configcheck
