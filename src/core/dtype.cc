#include "numprobe/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace numprobe {
namespace {

struct DTypeInfo {
  DType type;
  size_t size;
  bool floating;
  std::string_view name;
  std::string_view torch_name;
};

constexpr DTypeInfo kInfo[] = {
    {DType::kUnknown, 0, false, "unknown", "unknown"},
    {DType::kF64, 8, true, "float64", "torch.float64"},
    {DType::kF32, 4, true, "float32", "torch.float32"},
    {DType::kF16, 2, true, "float16", "torch.float16"},
    {DType::kBF16, 2, true, "bfloat16", "torch.bfloat16"},
    {DType::kF8E4M3FN, 1, true, "float8_e4m3fn", "torch.float8_e4m3fn"},
    {DType::kF8E5M2, 1, true, "float8_e5m2", "torch.float8_e5m2"},
    {DType::kI8, 1, false, "int8", "torch.int8"},
    {DType::kI16, 2, false, "int16", "torch.int16"},
    {DType::kI32, 4, false, "int32", "torch.int32"},
    {DType::kI64, 8, false, "int64", "torch.int64"},
    {DType::kU8, 1, false, "uint8", "torch.uint8"},
    {DType::kBool, 1, false, "bool", "torch.bool"},
};

const DTypeInfo& info(DType t) {
  const auto i = static_cast<size_t>(t);
  return i < sizeof(kInfo) / sizeof(kInfo[0]) ? kInfo[i] : kInfo[0];
}

struct Alias {
  std::string_view name;
  DType type;
};

// Spellings beyond the canonical and torch names of kInfo. Framework names are case-sensitive.
constexpr Alias kAliases[] = {
    // PyTorch legacy aliases.
    {"torch.double", DType::kF64},
    {"torch.float", DType::kF32},
    {"torch.half", DType::kF16},
    {"torch.short", DType::kI16},
    {"torch.int", DType::kI32},
    {"torch.long", DType::kI64},
    // MindSpore (msprobe dump.json) spellings.
    {"Float64", DType::kF64},
    {"Float32", DType::kF32},
    {"Float16", DType::kF16},
    {"BFloat16", DType::kBF16},
    {"Int8", DType::kI8},
    {"Int16", DType::kI16},
    {"Int32", DType::kI32},
    {"Int64", DType::kI64},
    {"UInt8", DType::kU8},
    {"Bool", DType::kBool},
    // numpy names; like numpy, bare "float" and "int" are the Python scalar types (64-bit).
    {"float", DType::kF64},
    {"double", DType::kF64},
    {"single", DType::kF32},
    {"half", DType::kF16},
    {"int", DType::kI64},
    {"bool_", DType::kBool},
};

// numpy kind+size ("f4") or one-character type codes ("d"), after the byte-order character.
DType from_numpy_code(std::string_view s) {
  if (s.size() == 1) {
    switch (s[0]) {
      case 'd':
        return DType::kF64;
      case 'f':
        return DType::kF32;
      case 'e':
        return DType::kF16;
      case 'b':
        return DType::kI8;
      case 'h':
        return DType::kI16;
      case 'i':
        return DType::kI32;
      case 'l':
      case 'q':
        return DType::kI64;
      case 'B':
        return DType::kU8;
      case '?':
        return DType::kBool;
      default:
        return DType::kUnknown;
    }
  }
  if (s.size() != 2) return DType::kUnknown;
  const char kind = s[0];
  const char size = s[1];
  switch (kind) {
    case 'f':
      return size == '8'   ? DType::kF64
             : size == '4' ? DType::kF32
             : size == '2' ? DType::kF16
                           : DType::kUnknown;
    case 'i':
      return size == '1'   ? DType::kI8
             : size == '2' ? DType::kI16
             : size == '4' ? DType::kI32
             : size == '8' ? DType::kI64
                           : DType::kUnknown;
    case 'u':
      return size == '1' ? DType::kU8 : DType::kUnknown;
    case 'b':
      return size == '1' ? DType::kBool : DType::kUnknown;
    default:
      return DType::kUnknown;
  }
}

uint32_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

float bits_float(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof(v));
  return v;
}

}  // namespace

size_t dtype_size(DType t) {
  return info(t).size;
}
bool dtype_is_floating(DType t) {
  return info(t).floating;
}
std::string_view dtype_name(DType t) {
  return info(t).name;
}
std::string_view dtype_torch_name(DType t) {
  return info(t).torch_name;
}

DType dtype_from_name(std::string_view name) {
  if (name.empty()) return DType::kUnknown;
  for (const DTypeInfo& i : kInfo) {
    if (i.type == DType::kUnknown) continue;
    if (name == i.name || name == i.torch_name) return i.type;
  }
  for (const Alias& a : kAliases) {
    if (name == a.name) return a.type;
  }
  constexpr std::string_view kMindSporePrefix = "mindspore.";
  if (name.substr(0, kMindSporePrefix.size()) == kMindSporePrefix) {
    const std::string_view rest = name.substr(kMindSporePrefix.size());
    for (const DTypeInfo& i : kInfo) {
      if (i.type != DType::kUnknown && rest == i.name) return i.type;
    }
    return rest == "bool_" ? DType::kBool : DType::kUnknown;
  }
  // numpy descr: optional byte order. Big-endian is only meaningful for one-byte types.
  const char order = name[0];
  if (order == '<' || order == '=' || order == '|' || order == '>') {
    const DType t = from_numpy_code(name.substr(1));
    if (order == '>' && dtype_size(t) > 1) return DType::kUnknown;
    return t;
  }
  return from_numpy_code(name);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  const uint32_t mant = bits & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 0x1F)
    return bits_float(sign | 0x7F800000u | (mant << 13));  // Inf or NaN (payload kept)
  return bits_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

float fp8_e4m3fn_to_float(uint8_t bits) {
  const bool neg = (bits & 0x80) != 0;
  const uint32_t exp = (bits >> 3) & 0xFu;
  const uint32_t mant = bits & 0x7u;
  float mag;
  if (exp == 0xF && mant == 0x7) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(mant), -9);
  } else {
    mag = bits_float(((exp + 127 - 7) << 23) | (mant << 20));
  }
  return neg ? -mag : mag;
}

float fp8_e5m2_to_float(uint8_t bits) {
  // E5M2 is the upper byte of an IEEE half.
  return half_to_float(static_cast<uint16_t>(bits << 8));
}

namespace {

// m >> s rounded to nearest, ties to even. 1 <= s <= 31.
uint32_t shift_rne(uint32_t m, unsigned s) {
  const uint32_t q = m >> s;
  const uint32_t rem = m & ((1u << s) - 1);
  const uint32_t half = 1u << (s - 1);
  return (rem > half || (rem == half && (q & 1u))) ? q + 1 : q;
}

}  // namespace

uint16_t float_to_half(float v) {
  const uint32_t x = float_bits(v);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) {
    // NaN: keep the top payload bits and force the quiet bit so it cannot become Inf.
    return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  // 65520 (halfway between 65504 and 2^16) rounds to even, i.e. up to Inf.
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (a >= 0x38800000u) {
    // Normal half: rebias the exponent; a carry out of the mantissa bumps the exponent correctly.
    return static_cast<uint16_t>(sign | shift_rne(a - 0x38000000u, 13));
  }
  // Subnormal half or zero. 2^-25 and below round to zero (2^-25 ties to even zero).
  if (a <= 0x33000000u) return sign;
  const uint32_t exp = a >> 23;  // 102..112
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  // value = mant * 2^(exp - 150); in units of 2^-24 that is mant >> (126 - exp).
  return static_cast<uint16_t>(sign | shift_rne(mant, 126 - exp));
}

uint16_t float_to_bf16(float v) {
  const uint32_t x = float_bits(v);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>(shift_rne(x, 16));
}

}  // namespace numprobe
