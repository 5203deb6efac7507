#include "replay/torch/aten_replay.h"

#include <ATen/Functions.h>

#include "capture/torch/tensor_leaf.h"
#include "numprobe/error.h"

namespace numprobe::replay {
namespace {

std::string python_tuple(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

at::Tensor as_doubles(const at::Tensor& t) {
  return t.detach().to(at::kCPU).to(at::kDouble).contiguous();
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
    c.bench_dtype = capture::torch_dtype_name(bench.scalar_type());
    c.device_dtype = capture::torch_dtype_name(device.scalar_type());
    c.shape = python_tuple(device.sizes());
    return c;
  }
  const at::Tensor b = as_doubles(bench), d = as_doubles(device);
  const size_t n = static_cast<size_t>(b.numel());
  return acc_compare_output(
      op, AccTensorView{b.data_ptr<double>(), n, capture::torch_dtype_name(bench.scalar_type())},
      AccTensorView{d.data_ptr<double>(), n, capture::torch_dtype_name(device.scalar_type())},
      python_tuple(device.sizes()));
}

}  // namespace numprobe::replay
