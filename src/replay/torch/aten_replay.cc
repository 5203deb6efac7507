#include "replay/torch/aten_replay.h"

#include <ATen/Functions.h>

#include "numprobe/error.h"

namespace numprobe::replay {
namespace {

std::string torch_dtype_name(at::ScalarType t) {
  // c10's names are "Float", "BFloat16", ...; dump.json and msprobe say torch.float32.
  switch (t) {
    case at::kFloat:
      return "torch.float32";
    case at::kDouble:
      return "torch.float64";
    case at::kHalf:
      return "torch.float16";
    case at::kBFloat16:
      return "torch.bfloat16";
    case at::kBool:
      return "torch.bool";
    case at::kByte:
      return "torch.uint8";
    case at::kChar:
      return "torch.int8";
    case at::kShort:
      return "torch.int16";
    case at::kInt:
      return "torch.int32";
    case at::kLong:
      return "torch.int64";
    default:
      return std::string("torch.") + c10::toString(t);
  }
}

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

void call_aten(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  op.callBoxed(stack);
}

at::ScalarType reference_dtype(at::ScalarType device) {
  switch (device) {
    case at::kHalf:
    case at::kBFloat16:
      return at::kFloat;
    case at::kFloat:
      return at::kDouble;
    default:
      return device;
  }
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
  const at::Tensor b = as_doubles(bench), d = as_doubles(device);
  const size_t n = static_cast<size_t>(b.numel());
  return acc_compare_output(
      op, AccTensorView{b.data_ptr<double>(), n, torch_dtype_name(bench.scalar_type())},
      AccTensorView{d.data_ptr<double>(), n, torch_dtype_name(device.scalar_type())},
      python_tuple(device.sizes()));
}

}  // namespace numprobe::replay
