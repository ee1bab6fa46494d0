// Number formats: every code decodes and re-encodes to itself, and encoding agrees with a
// brute-force nearest-value search (round half to even) on many floats, including PyTorch's
// overflow rules (e4m3fn -> NaN beyond 464, e5m2/f16 -> inf).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kh/core/minifloat.h"

namespace kh {
namespace {

struct Format {
  const char* name;
  MiniFloatFormat fmt;
  int width;
};

const Format kFormats[] = {{"e4m3", e4m3_format(), 8},
                           {"e5m2", e5m2_format(), 8},
                           {"e2m1", e2m1_format(), 4},
                           {"f16", float16_format(), 16}};

// Nearest finite code by exhaustive search; ties go to the even code (even mantissa LSB).
std::uint32_t nearest_code(float x, const Format& f) {
  const std::uint32_t count = 1u << (f.width - 1);
  double best = std::numeric_limits<double>::infinity();
  std::uint32_t best_code = 0;
  for (std::uint32_t c = 0; c < count; ++c) {
    if (c > f.fmt.max_finite_code) continue;
    const double v = decode_minifloat(c, f.fmt);
    const double d = std::abs(std::abs(static_cast<double>(x)) - v);
    if (d < best || (d == best && (c & 1u) == 0)) {
      best = d;
      best_code = c;
    }
  }
  return best_code | (std::signbit(x) ? 1u << (f.width - 1) : 0u);
}

TEST(MiniFloat, EveryFiniteCodeRoundTrips) {
  for (const auto& f : kFormats) {
    for (std::uint32_t c = 0; c < (1u << f.width); ++c) {
      const float v = decode_minifloat(c, f.fmt);
      if (std::isnan(v) || std::isinf(v)) continue;
      EXPECT_EQ(encode_minifloat(v, f.fmt), c) << f.name << " code " << c << " value " << v;
    }
  }
}

TEST(MiniFloat, EncodingMatchesBruteForceNearest) {
  std::mt19937 rng(7);
  for (const auto& f : kFormats) {
    const double max = decode_minifloat(f.fmt.max_finite_code, f.fmt);
    std::uniform_real_distribution<double> log_mag(std::log2(max) - 28, std::log2(max));
    for (int i = 0; i < 20000; ++i) {
      float x = static_cast<float>(std::exp2(log_mag(rng)));
      if (i % 2) x = -x;
      ASSERT_EQ(encode_minifloat(x, f.fmt), nearest_code(x, f)) << f.name << " x=" << x;
    }
    // Exact midpoints between neighbouring codes are ties: they go to the even code.
    for (std::uint32_t c = 0; c < f.fmt.max_finite_code; ++c) {
      const float mid = (decode_minifloat(c, f.fmt) + decode_minifloat(c + 1, f.fmt)) / 2;
      EXPECT_EQ(encode_minifloat(mid, f.fmt), (c & 1u) ? c + 1 : c) << f.name << " mid " << mid;
    }
  }
}

TEST(MiniFloat, E4M3FollowsTorchOverflowToNaN) {
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7e);  // tie between 448 and (NaN slot) 480 goes to even 448
  EXPECT_EQ(float_to_e4m3(465.0f), 0x7f);  // beyond: NaN, as torch casts
  EXPECT_EQ(float_to_e4m3(1e9f), 0x7f);
  EXPECT_EQ(float_to_e4m3(-1e9f), 0xff);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half of it: tie to even zero
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
}

TEST(MiniFloat, E5M2AndFloat16OverflowToInfinity) {
  EXPECT_EQ(float_to_e5m2(57344.0f), 0x7b);
  EXPECT_EQ(float_to_e5m2(1e9f), 0x7c);
  EXPECT_TRUE(std::isinf(e5m2_to_float(0x7c)));
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(f16_bits_to_float(0x3c00), 1.0f);
}

TEST(MiniFloat, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
}

}  // namespace
}  // namespace kh
