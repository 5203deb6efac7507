#include "torch/capture/aten_ops.h"

#include <mutex>
#include <unordered_map>
#include <utility>

namespace numprobe::capture {

const AtenOpInfo& aten_op_info(const at::RecordFunction& fn) {
  static std::mutex mu;
  static std::unordered_map<const char*, AtenOpInfo> ops;  // keyed by fn.name() (stable)
  std::lock_guard<std::mutex> lk(mu);
  auto it = ops.find(fn.name());
  if (it != ops.end()) return it->second;
  AtenOpInfo info;
  auto opname = fn.operator_name();
  if (!opname) {
    info.skip = true;
  } else {
    std::string name = opname->name;
    if (name.rfind("aten::", 0) == 0) name = name.substr(6);
    const std::string& ov = opname->overload_name;
    info.api_type = "Aten." + name + "." + (ov.empty() ? std::string("default") : ov);
    if (name.rfind("empty", 0) == 0 || name == "resize_" || name == "detach" || name == "lift" ||
        name == "lift_fresh" || name == "zeros" || name == "alias")
      info.skip = true;
    auto handle = c10::Dispatcher::singleton().findOp(*opname);
    if (!handle) {
      info.skip = true;
    } else {
      for (const auto& ret : handle->schema().returns()) {
        const auto* alias = ret.alias_info();
        if (alias && !alias->isWrite()) info.skip = true;
      }
      info.handle = *handle;
    }
  }
  return ops.emplace(fn.name(), std::move(info)).first->second;
}

}  // namespace numprobe::capture
