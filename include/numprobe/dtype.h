// Element types numprobe understands, their names in each framework, and exact decoding of the
// narrow floating-point formats (IEEE half, bfloat16, OCP FP8 E4M3FN and E5M2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace numprobe {

enum class DType : uint8_t {
  kUnknown = 0,
  kF64,
  kF32,
  kF16,
  kBF16,
  kF8E4M3FN,
  kF8E5M2,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kBool,
};

// Bytes per element; 0 for kUnknown.
size_t dtype_size(DType t);
bool dtype_is_floating(DType t);
// Canonical numprobe/numpy-style name: "float32", "bfloat16", "float8_e4m3fn", "int64", "bool".
std::string_view dtype_name(DType t);
// PyTorch spelling as msprobe writes it in dump.json: "torch.float32", "torch.bfloat16".
std::string_view dtype_torch_name(DType t);
// Accepts canonical, PyTorch ("torch.float16", also legacy "torch.half"/"torch.long"), MindSpore
// ("Float16", "BFloat16", "Int64", "UInt8", "Bool", "mindspore.float16") and numpy names: descrs
// with '<', '=', '|' or no byte order ("<f4", "f4", "|b1"), '>' only for one-byte types, type codes
// ("d", "e", "?") and "double"/"single"/"half". As in numpy, bare "float" and "int" mean the
// 64-bit Python types (float64, int64). Case-sensitive. Returns kUnknown for anything else.
DType dtype_from_name(std::string_view name);

// Exact decoders (every input bit pattern maps to the mathematically equal float, NaN to NaN; the
// sign of zero is kept). E4M3FN has no infinities and only S.1111.111 is NaN (max 448); E5M2 is
// IEEE-like (Inf, NaN, max 57344).
float half_to_float(uint16_t bits);
// Inline: it is a shift, and callers decode millions of elements per call.
inline float bf16_to_float(uint16_t bits) {
  const uint32_t b = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
float fp8_e4m3fn_to_float(uint8_t bits);
float fp8_e5m2_to_float(uint8_t bits);
// Round-to-nearest-even encoders (used by tests and by writers of synthetic data). Overflow gives
// Inf; NaN stays NaN (quiet, sign and top payload bits kept).
uint16_t float_to_half(float v);
uint16_t float_to_bf16(float v);

}  // namespace numprobe
