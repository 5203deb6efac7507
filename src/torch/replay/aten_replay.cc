#include "torch/replay/aten_replay.h"

#include <ATen/Functions.h>

#include "numprobe/error.h"
#include "torch/dtype_names.h"

namespace numprobe::replay {
namespace {

std::string python_tuple(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

// The CPU values of an output as float32 or float64, whichever holds them exactly without a
// copy where possible: float32/float64 as they are, float16/bfloat16 widened to float32, integers
// and bool to float64.
at::Tensor as_compared(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU);
  const at::ScalarType s = c.scalar_type();
  if (s == at::kHalf || s == at::kBFloat16) return c.to(at::kFloat).contiguous();
  if (s != at::kFloat && s != at::kDouble) return c.to(at::kDouble).contiguous();
  return c.contiguous();
}

AccTensorView view_of(const at::Tensor& values, const at::Tensor& original) {
  const size_t n = static_cast<size_t>(values.numel());
  std::string dtype = torch_dtype_name(original.scalar_type());
  if (values.scalar_type() == at::kFloat)
    return AccTensorView(values.data_ptr<float>(), n, std::move(dtype));
  return AccTensorView(values.data_ptr<double>(), n, std::move(dtype));
}

}  // namespace

c10::OperatorHandle find_aten_op(const std::string& op, const std::string& overload) {
  const std::string name = "aten::" + op;
  const std::string ov = overload == "default" ? "" : overload;
  auto handle = c10::Dispatcher::singleton().findSchema(c10::OperatorName(name, ov));
  if (!handle)
    throw Error("libtorch has no operator " + name + (ov.empty() ? "" : "." + ov) +
                " (recorded by a different torch version?)");
  return *handle;
}

AccColumns compare_tensors(const std::string& op, const at::Tensor& bench,
                           const at::Tensor& device) {
  if (bench.is_complex() || device.is_complex())
    return acc_unusable_output(AccStatus::kSkip, "complex outputs are not compared.");
  if (!bench.sizes().equals(device.sizes())) {
    AccColumns c = acc_unusable_output(
        AccStatus::kError, "The shape of bench" + python_tuple(bench.sizes()) + " and npu" +
                               python_tuple(device.sizes()) + " not equal.");
    c.bench_dtype = torch_dtype_name(bench.scalar_type());
    c.device_dtype = torch_dtype_name(device.scalar_type());
    c.shape = python_tuple(device.sizes());
    return c;
  }
  const at::Tensor b = as_compared(bench), d = as_compared(device);
  return acc_compare_output(op, view_of(b, bench), view_of(d, device),
                            python_tuple(device.sizes()));
}

}  // namespace numprobe::replay
