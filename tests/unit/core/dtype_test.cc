#include "numprobe/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace numprobe {
namespace {

// Reference decoders written from the format definitions (sign, exponent and mantissa fields, bias
// and subnormal scale), independently of the bit tricks in dtype.cc.
double ref_ieee_like(uint32_t bits, int exp_bits, int mant_bits, bool has_inf) {
  const uint32_t sign = (bits >> (exp_bits + mant_bits)) & 1u;
  const uint32_t exp = (bits >> mant_bits) & ((1u << exp_bits) - 1);
  const uint32_t mant = bits & ((1u << mant_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t max_exp = (1u << exp_bits) - 1;
  double mag;
  if (has_inf && exp == max_exp) {
    mag = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!has_inf && exp == max_exp && mant == (1u << mant_bits) - 1) {
    mag = std::numeric_limits<double>::quiet_NaN();  // e4m3fn: only S.1111.111 is NaN
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<double>(mant), 1 - bias - mant_bits);
  } else {
    mag = std::ldexp(static_cast<double>((1u << mant_bits) + mant),
                     static_cast<int>(exp) - bias - mant_bits);
  }
  return sign ? -mag : mag;
}

double ref_half(uint16_t b) {
  return ref_ieee_like(b, 5, 10, true);
}
double ref_bf16(uint16_t b) {
  return ref_ieee_like(b, 8, 7, true);
}
double ref_e4m3fn(uint8_t b) {
  return ref_ieee_like(b, 4, 3, false);
}
double ref_e5m2(uint8_t b) {
  return ref_ieee_like(b, 5, 2, true);
}

// Same value, including the sign of zero; NaN matches NaN.
void expect_same(double ref, float got, unsigned code) {
  if (std::isnan(ref)) {
    EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code;
    return;
  }
  EXPECT_EQ(static_cast<double>(got), ref) << "code 0x" << std::hex << code;
  EXPECT_EQ(std::signbit(got), std::signbit(ref)) << "code 0x" << std::hex << code;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(DType, SizesAndKinds) {
  EXPECT_EQ(dtype_size(DType::kUnknown), 0u);
  EXPECT_EQ(dtype_size(DType::kF64), 8u);
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kF16), 2u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF8E4M3FN), 1u);
  EXPECT_EQ(dtype_size(DType::kF8E5M2), 1u);
  EXPECT_EQ(dtype_size(DType::kI8), 1u);
  EXPECT_EQ(dtype_size(DType::kI16), 2u);
  EXPECT_EQ(dtype_size(DType::kI32), 4u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_size(DType::kU8), 1u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_TRUE(dtype_is_floating(DType::kBF16));
  EXPECT_TRUE(dtype_is_floating(DType::kF8E5M2));
  EXPECT_FALSE(dtype_is_floating(DType::kI64));
  EXPECT_FALSE(dtype_is_floating(DType::kBool));
  EXPECT_FALSE(dtype_is_floating(DType::kUnknown));
  EXPECT_EQ(dtype_size(static_cast<DType>(200)), 0u);
}

TEST(DType, Names) {
  EXPECT_EQ(dtype_name(DType::kF32), "float32");
  EXPECT_EQ(dtype_name(DType::kBF16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::kF8E4M3FN), "float8_e4m3fn");
  EXPECT_EQ(dtype_name(DType::kI64), "int64");
  EXPECT_EQ(dtype_name(DType::kBool), "bool");
  EXPECT_EQ(dtype_torch_name(DType::kF32), "torch.float32");
  EXPECT_EQ(dtype_torch_name(DType::kBF16), "torch.bfloat16");
  EXPECT_EQ(dtype_torch_name(DType::kU8), "torch.uint8");
}

TEST(DType, NamesRoundTrip) {
  for (int i = 1; i <= static_cast<int>(DType::kBool); ++i) {
    const auto t = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
    EXPECT_EQ(dtype_from_name(dtype_torch_name(t)), t) << dtype_torch_name(t);
  }
}

TEST(DType, FrameworkSpellings) {
  // PyTorch, including legacy aliases.
  EXPECT_EQ(dtype_from_name("torch.float16"), DType::kF16);
  EXPECT_EQ(dtype_from_name("torch.float"), DType::kF32);
  EXPECT_EQ(dtype_from_name("torch.half"), DType::kF16);
  EXPECT_EQ(dtype_from_name("torch.long"), DType::kI64);
  EXPECT_EQ(dtype_from_name("torch.float8_e5m2"), DType::kF8E5M2);
  // MindSpore.
  EXPECT_EQ(dtype_from_name("Float32"), DType::kF32);
  EXPECT_EQ(dtype_from_name("Float16"), DType::kF16);
  EXPECT_EQ(dtype_from_name("BFloat16"), DType::kBF16);
  EXPECT_EQ(dtype_from_name("Int64"), DType::kI64);
  EXPECT_EQ(dtype_from_name("Int32"), DType::kI32);
  EXPECT_EQ(dtype_from_name("UInt8"), DType::kU8);
  EXPECT_EQ(dtype_from_name("Bool"), DType::kBool);
  EXPECT_EQ(dtype_from_name("mindspore.float32"), DType::kF32);
  EXPECT_EQ(dtype_from_name("mindspore.bfloat16"), DType::kBF16);
  // numpy descr and type codes.
  EXPECT_EQ(dtype_from_name("<f4"), DType::kF32);
  EXPECT_EQ(dtype_from_name("f4"), DType::kF32);
  EXPECT_EQ(dtype_from_name("=f8"), DType::kF64);
  EXPECT_EQ(dtype_from_name("<f2"), DType::kF16);
  EXPECT_EQ(dtype_from_name("|b1"), DType::kBool);
  EXPECT_EQ(dtype_from_name("<i8"), DType::kI64);
  EXPECT_EQ(dtype_from_name("|i1"), DType::kI8);
  EXPECT_EQ(dtype_from_name("|u1"), DType::kU8);
  EXPECT_EQ(dtype_from_name(">u1"), DType::kU8);  // byte order is moot for one byte
  EXPECT_EQ(dtype_from_name("d"), DType::kF64);
  EXPECT_EQ(dtype_from_name("e"), DType::kF16);
  EXPECT_EQ(dtype_from_name("?"), DType::kBool);
  // numpy's "float" is the Python float, i.e. float64.
  EXPECT_EQ(dtype_from_name("float"), DType::kF64);
  EXPECT_EQ(dtype_from_name("double"), DType::kF64);
}

TEST(DType, UnknownNames) {
  for (const char* name :
       {"", "torch.complex64", "complex64", ">f4", ">i8", "f3", "<u2", "|O", "<U10", "Float",
        "float128", "torch.", "mindspore.", "FLOAT32", "bfloat", "<f4 ", "unknown"}) {
    EXPECT_EQ(dtype_from_name(name), DType::kUnknown) << "'" << name << "'";
  }
}

TEST(Decode, HalfExhaustive) {
  for (uint32_t b = 0; b < 65536; ++b) {
    expect_same(ref_half(static_cast<uint16_t>(b)), half_to_float(static_cast<uint16_t>(b)), b);
  }
}

TEST(Decode, BFloat16Exhaustive) {
  for (uint32_t b = 0; b < 65536; ++b) {
    expect_same(ref_bf16(static_cast<uint16_t>(b)), bf16_to_float(static_cast<uint16_t>(b)), b);
  }
}

TEST(Decode, Fp8Exhaustive) {
  for (uint32_t b = 0; b < 256; ++b) {
    expect_same(ref_e4m3fn(static_cast<uint8_t>(b)), fp8_e4m3fn_to_float(static_cast<uint8_t>(b)),
                b);
    expect_same(ref_e5m2(static_cast<uint8_t>(b)), fp8_e5m2_to_float(static_cast<uint8_t>(b)), b);
  }
}

TEST(Decode, KnownValuesFromSpecs) {
  // OCP FP8 E4M3FN: no infinities, NaN only at S.1111.111, max normal 448, min subnormal 2^-9.
  EXPECT_EQ(fp8_e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3fn_to_float(0xFE), -448.0f);
  EXPECT_EQ(fp8_e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3fn_to_float(0x08), std::ldexp(1.0f, -6));  // min normal
  EXPECT_EQ(fp8_e4m3fn_to_float(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3fn_to_float(0x78), 256.0f);  // exponent 15 is a normal binade
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0xFF)));
  EXPECT_TRUE(std::signbit(fp8_e4m3fn_to_float(0x80)));
  EXPECT_EQ(fp8_e4m3fn_to_float(0x80), 0.0f);
  // OCP FP8 E5M2: IEEE-like.
  EXPECT_EQ(fp8_e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(fp8_e5m2_to_float(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8_e5m2_to_float(0xFC), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_float(0x7D)));
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_float(0x7F)));
  EXPECT_EQ(fp8_e5m2_to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_e5m2_to_float(0x3C), 1.0f);
  // IEEE binary16.
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);  // nearest half to 1/3
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  // bfloat16.
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC000), -2.0f);
  EXPECT_EQ(bf16_to_float(0x7F7F), 3.3895313892515355e38f);
  EXPECT_EQ(bf16_to_float(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7FC0)));
}

// Every adjacent pair of finite codes (ordered by value): values at, just below and just above the
// midpoint must round to the nearer code, the even one on a tie.
template <typename Decode, typename Encode>
void check_rne(Decode decode, Encode encode, uint32_t max_finite, const char* what) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t m = 0; m < max_finite; ++m) {
      const auto lo = static_cast<uint16_t>(sign | m);
      const auto hi = static_cast<uint16_t>(sign | (m + 1));
      const float a = decode(lo);
      const float b = decode(hi);
      // Both formats have at most 11 significant bits, so the midpoint is exact in float.
      const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(a) + b) / 2) << what << " " << m;
      const uint16_t even = (m & 1) ? hi : lo;
      ASSERT_EQ(encode(mid), even) << what << " midpoint after 0x" << std::hex << m;
      ASSERT_EQ(encode(std::nextafter(mid, a)), lo)
          << what << " below midpoint 0x" << std::hex << m;
      ASSERT_EQ(encode(std::nextafter(mid, b)), hi)
          << what << " above midpoint 0x" << std::hex << m;
      ASSERT_EQ(encode(a), lo) << what << " exact 0x" << std::hex << m;
    }
  }
}

TEST(Encode, HalfRoundTripsEveryCode) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = half_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << std::hex << b;
    } else {
      EXPECT_EQ(float_to_half(f), b) << std::hex << b;
    }
  }
}

TEST(Encode, HalfRoundsToNearestEven) {
  check_rne(half_to_float, float_to_half, 0x7BFF, "half");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_half(65519.99f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // tie between 65504 (odd) and 2^16: even is Inf
  EXPECT_EQ(float_to_half(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half(inf), 0x7C00);
  EXPECT_EQ(float_to_half(-inf), 0xFC00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie with zero: even
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulp -> 1 ulp
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp ties to 2
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  // Largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400);
}

TEST(Encode, HalfNaNStaysNaN) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(qnan))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(-qnan))));
  // A signalling NaN whose payload lives only in the low bits must not become Inf.
  uint32_t snan_bits = 0x7F800001u;
  float snan;
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(snan))));
}

TEST(Encode, BFloat16RoundTripsEveryCode) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << std::hex << b;
    } else {
      EXPECT_EQ(float_to_bf16(f), b) << std::hex << b;
    }
  }
}

TEST(Encode, BFloat16RoundsToNearestEven) {
  check_rne(bf16_to_float, float_to_bf16, 0x7F7F, "bf16");
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  uint32_t snan_bits = 0x7F800001u;
  float snan;
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(snan))));
  EXPECT_EQ(bits_of(bf16_to_float(float_to_bf16(-0.0f))), 0x80000000u);
}

}  // namespace
}  // namespace numprobe
