// Conversions between float32 and the narrow float formats of FlashInfer-Bench tensors
// (bfloat16, float16, float8 e4m3fn / e5m2, float4 e2m1), done with integer arithmetic only and
// round-to-nearest-even, so the host and the GPU produce the same bits.
//
// Overflow follows PyTorch's casts, which the definitions' references use: e4m3fn has no
// infinity and turns anything beyond its largest finite value after rounding into NaN; e5m2 and
// float16 overflow to infinity; e2m1 has neither and saturates.
#pragma once

#include <cstdint>
#include <cstring>

#include "kh/core/host_device.h"

namespace kh {

struct MiniFloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  enum Overflow { kToInfinity, kToNaN, kSaturate } overflow;
  std::uint32_t max_finite_code;  // largest finite magnitude code (sign bit clear)
  std::uint32_t nan_code;         // a NaN (or, for e2m1, the largest value)
  std::uint32_t inf_code;         // infinity, where the format has one
};

// Functions rather than constants: device code may not refer to host globals.
KH_HD constexpr MiniFloatFormat float16_format() {
  return {5, 10, 15, MiniFloatFormat::kToInfinity, 0x7bff, 0x7e00, 0x7c00};
}
KH_HD constexpr MiniFloatFormat e4m3_format() {
  return {4, 3, 7, MiniFloatFormat::kToNaN, 0x7e, 0x7f, 0x7f};
}
KH_HD constexpr MiniFloatFormat e5m2_format() {
  return {5, 2, 15, MiniFloatFormat::kToInfinity, 0x7b, 0x7e, 0x7c};
}
KH_HD constexpr MiniFloatFormat e2m1_format() {
  return {2, 1, 1, MiniFloatFormat::kSaturate, 0x7, 0x7, 0x7};
}

KH_HD std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

KH_HD float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Encodes f in the given format, rounding to nearest even. Returns the code in the low bits.
KH_HD std::uint32_t encode_minifloat(float f, MiniFloatFormat fmt) {
  const std::uint32_t bits = float_bits(f);
  const std::uint32_t sign = (bits >> 31) << (fmt.exponent_bits + fmt.mantissa_bits);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | fmt.nan_code;
  if (magnitude == 0x7f800000u) {
    if (fmt.overflow == MiniFloatFormat::kToInfinity) return sign | fmt.inf_code;
    return sign | (fmt.overflow == MiniFloatFormat::kToNaN ? fmt.nan_code : fmt.max_finite_code);
  }
  if (magnitude == 0) return sign;

  // magnitude = significand * 2^(exponent - 150), significand < 2^24.
  const int biased = static_cast<int>(magnitude >> 23);
  std::uint32_t significand = magnitude & 0x7fffffu;
  int exponent = biased;
  if (biased == 0) {
    exponent = 1;  // float32 subnormal
  } else {
    significand |= 0x800000u;
  }
  int top_bit = 23;  // floor(log2(significand))
  while (!(significand >> top_bit)) --top_bit;
  const int log2_value = exponent - 150 + top_bit;
  const int min_exponent = 1 - fmt.bias;
  const int target_exponent = log2_value > min_exponent ? log2_value : min_exponent;

  // Count of target quanta 2^(target_exponent - mantissa_bits) in the value, rounded to even.
  const int shift = (exponent - 150) - (target_exponent - fmt.mantissa_bits);
  std::uint64_t quanta;
  if (shift >= 0) {
    quanta = static_cast<std::uint64_t>(significand) << shift;
  } else if (-shift >= 26) {
    quanta = 0;  // below half a quantum
  } else {
    const int r = -shift;
    quanta = significand >> r;
    const std::uint32_t remainder = significand & ((1u << r) - 1u);
    const std::uint32_t half = 1u << (r - 1);
    if (remainder > half || (remainder == half && (quanta & 1u))) ++quanta;
  }
  const std::uint64_t code =
      (static_cast<std::uint64_t>(target_exponent + fmt.bias - 1) << fmt.mantissa_bits) + quanta;
  if (code > fmt.max_finite_code) {
    switch (fmt.overflow) {
      case MiniFloatFormat::kToInfinity:
        return sign | fmt.inf_code;
      case MiniFloatFormat::kToNaN:
        return sign | fmt.nan_code;
      case MiniFloatFormat::kSaturate:
        return sign | fmt.max_finite_code;
    }
  }
  return sign | static_cast<std::uint32_t>(code);
}

KH_HD float decode_minifloat(std::uint32_t code, MiniFloatFormat fmt) {
  const int width = fmt.exponent_bits + fmt.mantissa_bits;
  const bool negative = (code >> width) & 1u;
  const std::uint32_t magnitude = code & ((1u << width) - 1u);
  const std::uint32_t exponent_field = magnitude >> fmt.mantissa_bits;
  const std::uint32_t mantissa = magnitude & ((1u << fmt.mantissa_bits) - 1u);
  float value;
  if (fmt.overflow == MiniFloatFormat::kToNaN && magnitude == fmt.nan_code) {
    value = bits_float(0x7fc00000u);
  } else if (fmt.overflow == MiniFloatFormat::kToInfinity &&
             exponent_field == (1u << fmt.exponent_bits) - 1u) {
    value = bits_float(mantissa ? 0x7fc00000u : 0x7f800000u);
  } else {
    // Build the float32 bit pattern directly: every value of these formats is a normal float32.
    if (exponent_field == 0) {
      if (mantissa == 0) return negative ? -0.0f : 0.0f;
      int e = 1 - fmt.bias - fmt.mantissa_bits;  // value = mantissa * 2^e
      std::uint32_t m = mantissa;
      int top = 0;
      while (m >> (top + 1)) ++top;
      e += top;  // value = 1.xxx * 2^e
      const std::uint32_t frac = (m & ((1u << top) - 1u)) << (23 - top);
      value = bits_float((static_cast<std::uint32_t>(e + 127) << 23) | frac);
    } else {
      const int e = static_cast<int>(exponent_field) - fmt.bias;
      value = bits_float((static_cast<std::uint32_t>(e + 127) << 23) |
                         (mantissa << (23 - fmt.mantissa_bits)));
    }
  }
  return negative ? -value : value;
}

/// bfloat16 is float32's top half; round to nearest even, NaN stays a quiet NaN.
KH_HD std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t bits = float_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

KH_HD float bf16_bits_to_float(std::uint16_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

KH_HD std::uint8_t float_to_e4m3(float f) {
  return static_cast<std::uint8_t>(encode_minifloat(f, e4m3_format()));
}
KH_HD float e4m3_to_float(std::uint8_t c) {
  return decode_minifloat(c, e4m3_format());
}
KH_HD std::uint8_t float_to_e5m2(float f) {
  return static_cast<std::uint8_t>(encode_minifloat(f, e5m2_format()));
}
KH_HD float e5m2_to_float(std::uint8_t c) {
  return decode_minifloat(c, e5m2_format());
}
KH_HD std::uint16_t float_to_f16_bits(float f) {
  return static_cast<std::uint16_t>(encode_minifloat(f, float16_format()));
}
KH_HD float f16_bits_to_float(std::uint16_t c) {
  return decode_minifloat(c, float16_format());
}
KH_HD std::uint8_t float_to_e2m1(float f) {
  return static_cast<std::uint8_t>(encode_minifloat(f, e2m1_format()));
}
KH_HD float e2m1_to_float(std::uint8_t c) {
  return decode_minifloat(c & 0xfu, e2m1_format());
}

}  // namespace kh
