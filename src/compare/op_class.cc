// Op classes by API name (judgement.h). Names are msprobe's: "<Prefix>.<op>.<n>.<dir>",
// with the op lower-cased by the frameworks already (torch's and MindSpore's spellings).
#include <algorithm>
#include <cmath>
#include <string>

#include "compare/judgement.h"
#include "format/entry_name.h"
#include "numprobe/compare/tensor_metrics.h"

namespace numprobe {
namespace {

bool has(std::string_view op, std::string_view part) {
  return op.find(part) != std::string_view::npos;
}

bool any_of(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

OpClass forward_class(std::string_view op) {
  if (has(op, "conv") || has(op, "matmul") || has(op, "linear") || has(op, "lstm") ||
      has(op, "gru") || has(op, "rnn") || has(op, "attention") || has(op, "einsum") ||
      any_of(op, {"mm", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "mv", "dot", "inner",
                  "tensordot", "bilinear", "dense", "batchmatmul", "__matmul__", "__rmatmul__"}))
    return OpClass::kContraction;
  if (has(op, "norm") && !any_of(op, {"norm", "frobenius_norm", "nuclear_norm"}))
    return OpClass::kNormalization;  // layer_norm, batch_norm, group_norm, rms_norm, normalize
  if (has(op, "softmax") || has(op, "softmin")) return OpClass::kSoftmax;
  if (has(op, "loss") || has(op, "entropy") || has(op, "avg_pool") || has(op, "cum") ||
      any_of(op, {"sum",         "mean",           "prod",         "norm",     "std",
                  "var",         "logsumexp",      "nansum",       "nanmean",  "embedding_bag",
                  "cdist",       "dist",           "kl_div",       "trace",    "reduce_sum",
                  "reduce_mean", "frobenius_norm", "nuclear_norm", "std_mean", "var_mean"}))
    return OpClass::kReduction;
  // Deterministic ops: no accumulation, so bitwise-equal inputs give bitwise-equal outputs on any
  // number of threads and any BLAS. Listed, not assumed: an op missing here is kUnknown.
  static const std::initializer_list<std::string_view> kElementwise = {"relu",
                                                                       "relu_",
                                                                       "gelu",
                                                                       "silu",
                                                                       "sigmoid",
                                                                       "tanh",
                                                                       "leaky_relu",
                                                                       "elu",
                                                                       "selu",
                                                                       "celu",
                                                                       "hardswish",
                                                                       "hardsigmoid",
                                                                       "hardtanh",
                                                                       "relu6",
                                                                       "mish",
                                                                       "softplus",
                                                                       "softsign",
                                                                       "swish",
                                                                       "fast_gelu",
                                                                       "add",
                                                                       "add_",
                                                                       "sub",
                                                                       "sub_",
                                                                       "mul",
                                                                       "mul_",
                                                                       "div",
                                                                       "div_",
                                                                       "neg",
                                                                       "abs",
                                                                       "exp",
                                                                       "log",
                                                                       "log1p",
                                                                       "expm1",
                                                                       "pow",
                                                                       "sqrt",
                                                                       "rsqrt",
                                                                       "square",
                                                                       "reciprocal",
                                                                       "clamp",
                                                                       "clamp_",
                                                                       "clip",
                                                                       "maximum",
                                                                       "minimum",
                                                                       "where",
                                                                       "masked_fill",
                                                                       "masked_fill_",
                                                                       "erf",
                                                                       "sin",
                                                                       "cos",
                                                                       "floor",
                                                                       "ceil",
                                                                       "round",
                                                                       "sign",
                                                                       "lerp",
                                                                       "addcmul",
                                                                       "addcdiv",
                                                                       "__add__",
                                                                       "__radd__",
                                                                       "__iadd__",
                                                                       "__sub__",
                                                                       "__rsub__",
                                                                       "__mul__",
                                                                       "__rmul__",
                                                                       "__imul__",
                                                                       "__truediv__",
                                                                       "__rtruediv__",
                                                                       "__itruediv__",
                                                                       "__neg__",
                                                                       "__pow__",
                                                                       "__rpow__",
                                                                       "dropout",
                                                                       "dropout2d",
                                                                       "to",
                                                                       "float",
                                                                       "half",
                                                                       "bfloat16",
                                                                       "double",
                                                                       "int",
                                                                       "long",
                                                                       "bool",
                                                                       "type_as",
                                                                       "cast",
                                                                       "contiguous",
                                                                       "clone",
                                                                       "view",
                                                                       "view_as",
                                                                       "reshape",
                                                                       "transpose",
                                                                       "permute",
                                                                       "flatten",
                                                                       "unflatten",
                                                                       "squeeze",
                                                                       "unsqueeze",
                                                                       "expand",
                                                                       "expand_as",
                                                                       "repeat",
                                                                       "split",
                                                                       "chunk",
                                                                       "unbind",
                                                                       "cat",
                                                                       "concat",
                                                                       "stack",
                                                                       "narrow",
                                                                       "select",
                                                                       "index_select",
                                                                       "gather",
                                                                       "__getitem__",
                                                                       "__setitem__",
                                                                       "embedding",
                                                                       "triu",
                                                                       "tril",
                                                                       "ones",
                                                                       "zeros",
                                                                       "ones_like",
                                                                       "zeros_like",
                                                                       "full",
                                                                       "full_like",
                                                                       "arange",
                                                                       "max_pool2d",
                                                                       "max_pool1d",
                                                                       "max_pool3d",
                                                                       "adaptive_max_pool2d",
                                                                       "adaptive_max_pool1d",
                                                                       "pad",
                                                                       "roll",
                                                                       "flip",
                                                                       "t",
                                                                       "detach",
                                                                       "max",
                                                                       "min",
                                                                       "amax",
                                                                       "amin",
                                                                       "argmax",
                                                                       "argmin",
                                                                       "topk",
                                                                       "sort",
                                                                       "eq",
                                                                       "ne",
                                                                       "lt",
                                                                       "le",
                                                                       "gt",
                                                                       "ge",
                                                                       "logical_not",
                                                                       "logical_and",
                                                                       "logical_or",
                                                                       "isnan",
                                                                       "isinf",
                                                                       "isfinite",
                                                                       "nan_to_num",
                                                                       "one_hot",
                                                                       "interpolate",
                                                                       "upsample",
                                                                       "pixel_shuffle",
                                                                       "silu_",
                                                                       "gelu_"};
  if (any_of(op, kElementwise)) return OpClass::kElementwise;
  return OpClass::kUnknown;
}

}  // namespace

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kContraction:
      return "contraction";
    case OpClass::kNormalization:
      return "normalization";
    case OpClass::kSoftmax:
      return "softmax";
    case OpClass::kCollective:
      return "collective";
    case OpClass::kModule:
      return "module";
    case OpClass::kUnknown:
      return "unknown";
  }
  return "?";
}

const char* regime_name(Regime r) {
  switch (r) {
    case Regime::kBitwise:
      return "bitwise";
    case Regime::kReductionOrder:
      return "reduction_order";
    case Regime::kTf32:
      return "tf32";
    case Regime::kLowPrecision:
      return "low_precision";
    case Regime::kMixedPrecision:
      return "mixed_precision";
  }
  return "?";
}

bool contraction_module(std::string_view entry_name) {
  const EntryName n = parse_entry_name(entry_name);
  if (!n.is_module) return false;
  // "layers.0.attn.wq.Linear": the class is the last component of the module's path.
  const size_t dot = n.op.rfind('.');
  std::string cls(dot == std::string_view::npos ? n.op : n.op.substr(dot + 1));
  std::transform(cls.begin(), cls.end(), cls.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return forward_class(cls) == OpClass::kContraction;
}

OpClass op_class(std::string_view entry_name) {
  const EntryName n = parse_entry_name(entry_name);
  if (n.is_module) return OpClass::kModule;
  if (n.prefix == "Distributed") return OpClass::kCollective;
  std::string op(n.op);
  std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
  const OpClass c = forward_class(op);
  if (c == OpClass::kElementwise && n.direction == Direction::kBackward) return OpClass::kReduction;
  return c;
}

double reduction_order_tolerance(OpClass c, DType dtype, double n) {
  if (c == OpClass::kElementwise || c == OpClass::kModule) return 0;
  const double eps = dtype_is_floating(dtype) ? dtype_epsilon(dtype) : 0;
  return 4 * std::sqrt(std::max(n, 1.0)) * eps;
}

}  // namespace numprobe
