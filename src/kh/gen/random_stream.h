// Draws of one random stream (one Philox key): element i's uniform, normal and integer values.
// Everything here uses only integer operations and correctly rounded IEEE double operations
// (+, -, *, /, sqrt) in a fixed order, with our own logarithm instead of libm's, so the host and
// the GPU produce bit-identical values. Build with -ffp-contract=off on the host; device code
// calling these must not be compiled with fast-math.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kh/core/host_device.h"
#include "kh/gen/philox.h"

namespace kh {

/// Natural logarithm of a positive finite double, accurate to about 1 ulp, computed from the
/// exponent bits and an atanh series, so it is identical wherever it runs.
KH_HD double portable_log(double x) {
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof x);
  std::memcpy(&bits, &x, sizeof x);
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // mantissa in [1, 2)
  double m;
  std::memcpy(&m, &bits, sizeof m);
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    exponent += 1;
  }
  const double s = (m - 1.0) / (m + 1.0);  // |s| <= 0.1716
  const double s2 = s * s;
  // log(m) = 2 (s + s^3/3 + s^5/5 + ...); 12 terms reach double precision for |s| <= 0.1716.
  double series = 1.0 / 25.0;
  series = series * s2 + 1.0 / 23.0;
  series = series * s2 + 1.0 / 21.0;
  series = series * s2 + 1.0 / 19.0;
  series = series * s2 + 1.0 / 17.0;
  series = series * s2 + 1.0 / 15.0;
  series = series * s2 + 1.0 / 13.0;
  series = series * s2 + 1.0 / 11.0;
  series = series * s2 + 1.0 / 9.0;
  series = series * s2 + 1.0 / 7.0;
  series = series * s2 + 1.0 / 5.0;
  series = series * s2 + 1.0 / 3.0;
  series = series * s2 + 1.0;
  return static_cast<double>(exponent) * 0.6931471805599453 + 2.0 * s * series;
}

/// Standard normal quantile of p in (0, 1) (Acklam's rational approximation, relative error
/// below 1.2e-9: far below what any kh input dtype can represent).
KH_HD double normal_quantile(double p) {
  constexpr double a0 = -3.969683028665376e+01, a1 = 2.209460984245205e+02,
                   a2 = -2.759285104469687e+02, a3 = 1.383577518672690e+02,
                   a4 = -3.066479806614716e+01, a5 = 2.506628277459239e+00;
  constexpr double b0 = -5.447609879822406e+01, b1 = 1.615858368580409e+02,
                   b2 = -1.556989798598866e+02, b3 = 6.680131188771972e+01,
                   b4 = -1.328068155288572e+01;
  constexpr double c0 = -7.784894002430293e-03, c1 = -3.223964580411365e-01,
                   c2 = -2.400758277161838e+00, c3 = -2.549732539343734e+00,
                   c4 = 4.374664141464968e+00, c5 = 2.938163982698783e+00;
  constexpr double d0 = 7.784695709041462e-03, d1 = 3.224671290700398e-01,
                   d2 = 2.445134137142996e+00, d3 = 3.754408661907416e+00;
  constexpr double kLow = 0.02425;
  if (p < kLow || p > 1.0 - kLow) {
    const double tail = p < kLow ? p : 1.0 - p;
    const double q = sqrt(-2.0 * portable_log(tail));
    const double x = (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) /
                     ((((d0 * q + d1) * q + d2) * q + d3) * q + 1.0);
    return p < kLow ? x : -x;
  }
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q /
         (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1.0);
}

struct RandomStream {
  PhiloxKey key;

  KH_HD PhiloxBlock block(std::int64_t i) const {
    const auto u = static_cast<std::uint64_t>(i);
    return philox4x32_10(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(u >> 32), 0, 0,
                         key);
  }
  /// Uniform in the open interval (0, 1) with 53 random bits.
  KH_HD double uniform(std::int64_t i) const {
    const PhiloxBlock b = block(i);
    const double hi = static_cast<double>(b.w[0] >> 5);  // 27 bits
    const double lo = static_cast<double>(b.w[1] >> 6);  // 26 bits
    return (hi * 67108864.0 + lo + 0.5) * (1.0 / 9007199254740992.0);
  }
  KH_HD double normal(std::int64_t i) const { return normal_quantile(uniform(i)); }
  /// Uniform on [lo, hi] (inclusive; hi - lo < 2^32) from the block's third word.
  KH_HD std::int64_t uniform_int(std::int64_t i, std::int64_t lo, std::int64_t hi) const {
    const std::uint64_t range = static_cast<std::uint64_t>(hi - lo) + 1u;
    return lo +
           static_cast<std::int64_t>((static_cast<std::uint64_t>(block(i).w[2]) * range) >> 32);
  }
  /// Uniform on [lo, hi) as a double.
  KH_HD double uniform_range(std::int64_t i, double lo, double hi) const {
    return lo + (hi - lo) * uniform(i);
  }
  KH_HD bool coin(std::int64_t i) const { return block(i).w[3] & 1u; }
};

}  // namespace kh
