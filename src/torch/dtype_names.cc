#include "torch/dtype_names.h"

namespace numprobe {

const char* torch_dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Double:
      return "torch.float64";
    case c10::ScalarType::Float:
      return "torch.float32";
    case c10::ScalarType::Half:
      return "torch.float16";
    case c10::ScalarType::BFloat16:
      return "torch.bfloat16";
    case c10::ScalarType::Char:
      return "torch.int8";
    case c10::ScalarType::Short:
      return "torch.int16";
    case c10::ScalarType::Int:
      return "torch.int32";
    case c10::ScalarType::Long:
      return "torch.int64";
    case c10::ScalarType::Byte:
      return "torch.uint8";
    case c10::ScalarType::Bool:
      return "torch.bool";
    case c10::ScalarType::ComplexFloat:
      return "torch.complex64";
    case c10::ScalarType::ComplexDouble:
      return "torch.complex128";
    case c10::ScalarType::ComplexHalf:
      return "torch.complex32";
    default:
      return "torch.unknown";
  }
}

DType to_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Double:
      return DType::kF64;
    case c10::ScalarType::Float:
      return DType::kF32;
    case c10::ScalarType::Half:
      return DType::kF16;
    case c10::ScalarType::BFloat16:
      return DType::kBF16;
    case c10::ScalarType::Char:
      return DType::kI8;
    case c10::ScalarType::Short:
      return DType::kI16;
    case c10::ScalarType::Int:
      return DType::kI32;
    case c10::ScalarType::Long:
      return DType::kI64;
    case c10::ScalarType::Byte:
      return DType::kU8;
    case c10::ScalarType::Bool:
      return DType::kBool;
    default:
      return DType::kUnknown;
  }
}

}  // namespace numprobe
