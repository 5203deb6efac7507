// The env and pip checks (docs/config_check.md): environment variables read with each pack's own
// device spelling (HCCL_*/NCCL_*, ASCEND_*/CUDA_*), and the versions of the packages a training
// depends on.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "config_check/config_compare.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

struct EnvPair {
  const char* npu;  // nullptr: the variable does not exist on that device
  const char* gpu;
  const char* unset;  // the value an unset variable reads as ("None": no default)
};
// The same table as python/numprobe/config_check/env.py, which chooses what a pack keeps.
const EnvPair kPairs[] = {
    {"HCCL_DETERMINISTIC", "NCCL_DETERMINISTIC", "False"},
    {"HCCL_ALGO", "NCCL_ALGO", "None"},
    {"HCCL_BUFFSIZE", "NCCL_BUFFSIZE", "None"},
    {"HCCL_INTRA_ROCE_ENABLE", nullptr, "0"},
    {"HCCL_INTRA_PCIE_ENABLE", nullptr, "1"},
    {"ASCEND_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING", "0"},
    {"ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "None"},
    {"LCCL_DETERMINISTIC", nullptr, "0"},
    {nullptr, "CUBLAS_WORKSPACE_CONFIG", "None"},
    {nullptr, "NVIDIA_TF32_OVERRIDE", "None"},
    {nullptr, "NCCL_PROTO", "None"},
    {"PYTHONHASHSEED", "PYTHONHASHSEED", "None"},
    {"OMP_NUM_THREADS", "OMP_NUM_THREADS", "None"},
    {"MKL_NUM_THREADS", "MKL_NUM_THREADS", "None"},
    {"OPENBLAS_NUM_THREADS", "OPENBLAS_NUM_THREADS", "None"},
    {"TORCH_DETERMINISTIC", "TORCH_DETERMINISTIC", "None"},
    {"CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_DEVICE_MAX_CONNECTIONS", "None"},
    {"TORCH_CUDNN_V8_API_DISABLED", "TORCH_CUDNN_V8_API_DISABLED", "None"},
    {"DNNL_DEFAULT_FPMATH_MODE", "DNNL_DEFAULT_FPMATH_MODE", "None"},
    {"ONEDNN_DEFAULT_FPMATH_MODE", "ONEDNN_DEFAULT_FPMATH_MODE", "None"},
    {"WORLD_SIZE", "WORLD_SIZE", "None"},
};

// The Python packages whose versions are compared (after name folding).
const char* const kPackages[] = {
    "torch",      "torchvision", "numpy",    "transformers", "deepspeed",  "megatron-core",
    "megatron",   "mindspeed",   "datasets", "peft",         "accelerate", "apex",
    "flash-attn", "triton",      "scipy",    "mindspore",    "torch-npu"};

std::map<std::string, std::string> env_of(const Pack& pack) {
  const Json j = parse_member_json(pack.member("env"), pack.path(), "env");
  if (j.kind != Json::kObject) throw InputError(pack.path(), "member env is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.fields) out[k] = v.python_str();
  return out;
}

bool ascend(const std::map<std::string, std::string>& env) {
  return std::any_of(env.begin(), env.end(),
                     [](const auto& kv) { return kv.first.find("ASCEND") != std::string::npos; });
}

// `-`, `_` and `.` runs fold to one `-`; lower case (Python's packaging name rule).
std::string fold(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const bool sep = ch == '-' || ch == '_' || ch == '.';
    if (sep) {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  return out;
}

std::map<std::string, std::string> pip_of(const Pack& pack) {
  std::map<std::string, std::string> out;
  const std::string& text = pack.member("pip");
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    const size_t eq = line.find('=');
    const std::string name = line.substr(0, eq);
    if (name.empty()) continue;
    out[fold(name)] = eq == std::string::npos ? "" : line.substr(eq + 1);
  }
  return out;
}

}  // namespace

CheckTable compare_env(const Pack& bench_pack, const Pack& cmp_pack) {
  const auto bench = env_of(bench_pack), cmp = env_of(cmp_pack);
  const bool bench_npu = ascend(bench), cmp_npu = ascend(cmp);
  CheckTable t{
      "env", {"bench_env_name", "cmp_env_name", "bench_value", "cmp_value", "level"}, {}, "", ""};
  for (const EnvPair& p : kPairs) {
    const char* b_name = bench_npu ? p.npu : p.gpu;
    const char* c_name = cmp_npu ? p.npu : p.gpu;
    auto value = [&](const std::map<std::string, std::string>& env, const char* name) {
      const auto it = env.find(name);
      return it == env.end() ? std::string(p.unset) : it->second;
    };
    if (b_name && c_name) {
      const std::string bv = value(bench, b_name), cv = value(cmp, c_name);
      if (bv != cv)
        t.rows.push_back({Cell::str(b_name), Cell::str(c_name), Cell::str(bv), Cell::str(cv),
                          Cell::str("error")});
    } else if (b_name && bench.count(b_name)) {
      t.rows.push_back({Cell::str(b_name), Cell::str("only bench has this env"),
                        Cell::str(value(bench, b_name)), Cell::str(""), Cell::str("warning")});
    } else if (c_name && cmp.count(c_name)) {
      t.rows.push_back({Cell::str("only cmp has this env"), Cell::str(c_name), Cell::str(""),
                        Cell::str(value(cmp, c_name)), Cell::str("warning")});
    }
  }
  t.status = level_status_of(t.rows, 4);
  return t;
}

CheckTable compare_pip(const Pack& bench_pack, const Pack& cmp_pack, const std::string& framework) {
  const auto bench = pip_of(bench_pack), cmp = pip_of(cmp_pack);
  std::vector<std::string> names;
  for (const char* n : kPackages) names.push_back(fold(n));
  names.push_back(fold(framework));
  std::set<std::string> debs;
  for (const auto* side : {&bench, &cmp})
    for (const auto& kv : *side)
      if (kv.first.rfind("deb:", 0) == 0) debs.insert(kv.first);
  names.insert(names.end(), debs.begin(), debs.end());
  CheckTable t{"pip", {"package", "bench version", "cmp version", "level"}, {}, "", ""};
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) continue;
    const auto b = bench.find(name), c = cmp.find(name);
    const std::optional<std::string> bv =
        b == bench.end() ? std::nullopt : std::optional<std::string>(b->second);
    const std::optional<std::string> cv =
        c == cmp.end() ? std::nullopt : std::optional<std::string>(c->second);
    if (bv == cv) continue;
    t.rows.push_back({Cell::str(name), Cell::str(bv && !bv->empty() ? *bv : "None"),
                      Cell::str(cv && !cv->empty() ? *cv : "None"), Cell::str("error")});
  }
  t.status = level_status_of(t.rows, 3);
  return t;
}

}  // namespace numprobe::configcheck
