// What the RecordFunction observers (capture's L2 / C++ API levels, free_benchmark) need to know
// about an aten op, looked up once per op and cached.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>

#include <optional>
#include <string>

namespace numprobe::capture {

struct AtenOpInfo {
  // Views and ops that only alias inputs, allocation ops (empty*, zeros, resize_: uninitialised or
  // constant outputs), ops without a schema: not APIs worth an entry or a re-run.
  bool skip = false;
  std::string api_type;  // "Aten.add.Tensor"
  std::optional<c10::OperatorHandle> handle;
};

// The info of the op a RecordFunction records (stable reference; thread-safe).
const AtenOpInfo& aten_op_info(const at::RecordFunction& fn);

}  // namespace numprobe::capture
