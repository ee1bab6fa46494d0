// The random primitives: Philox known answers, the portable logarithm against libm, the normal
// quantile and the uniform draws' distributions, key derivation.
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "kh/gen/philox.h"
#include "kh/gen/random_stream.h"
#include "kh/gen/stream_key.h"

namespace kh {
namespace {

TEST(Philox, MatchesRandom123KnownAnswers) {
  // Known-answer vectors of Philox4x32-10 published with Random123 (kat_vectors).
  auto b = philox4x32_10(0, 0, 0, 0, {0, 0});
  EXPECT_EQ(b.w[0], 0x6627e8d5u);
  EXPECT_EQ(b.w[1], 0xe169c58du);
  EXPECT_EQ(b.w[2], 0xbc57ac4cu);
  EXPECT_EQ(b.w[3], 0x9b00dbd8u);
  b = philox4x32_10(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(b.w[0], 0x408f276du);
  EXPECT_EQ(b.w[1], 0x41c83b0eu);
  EXPECT_EQ(b.w[2], 0xa20bc7c6u);
  EXPECT_EQ(b.w[3], 0x6d5451fdu);
  b = philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(b.w[0], 0xd16cfe09u);
  EXPECT_EQ(b.w[1], 0x94fdccebu);
  EXPECT_EQ(b.w[2], 0x5001e420u);
  EXPECT_EQ(b.w[3], 0x24126ea1u);
}

TEST(PortableLog, AgreesWithLibmToAboutOneUlp) {
  for (double x :
       {1e-300, 1e-20, 0.001, 0.5, 0.7071, 1.0, 1.0000001, 1.5, 2.0, 3.0, 10.0, 1e10, 1e300}) {
    const double want = std::log(x);
    EXPECT_NEAR(portable_log(x), want, 4e-16 * std::max(1.0, std::abs(want))) << x;
  }
  RandomStream s{{1, 2}};
  for (int i = 0; i < 100000; ++i) {
    const double x = s.uniform(i);
    ASSERT_NEAR(portable_log(x), std::log(x), 4e-16 * std::max(1.0, std::abs(std::log(x)))) << x;
  }
}

TEST(NormalQuantile, InvertsTheNormalCdf) {
  for (double p : {1e-12, 1e-6, 0.001, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.97575, 0.999, 1 - 1e-9}) {
    const double x = normal_quantile(p);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    // Acklam's relative error in x is below 1.15e-9, so |cdf(x) - p| <= pdf(x) * |x| * 1.15e-9.
    const double pdf = std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(cdf, p, 1.2 * pdf * std::abs(x) * 1.15e-9 + 1e-18) << p;
  }
}

TEST(RandomStream, DrawsHaveTheRightDistributions) {
  RandomStream s{{42, 7}};
  constexpr int n = 200000;
  double sum = 0, sum2 = 0, usum = 0;
  std::int64_t lo = 0, hi = 0, ints_sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = s.normal(i);
    sum += x;
    sum2 += x * x;
    const double u = s.uniform(i);
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    usum += u;
    const std::int64_t k = s.uniform_int(i, -1024, 1023);
    ASSERT_GE(k, -1024);
    ASSERT_LE(k, 1023);
    lo += k == -1024;
    hi += k == 1023;
    ints_sum += k;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0, 0.01);
  EXPECT_NEAR(usum / n, 0.5, 0.005);
  EXPECT_GT(lo, 0);  // both ends are reachable
  EXPECT_GT(hi, 0);
  EXPECT_NEAR(static_cast<double>(ints_sum) / n, -0.5, 5.0);
}

TEST(StreamKey, EveryFieldChangesTheKey) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> keys;
  for (std::uint64_t seed : {1ull, 2ull})
    for (const char* uuid : {"a", "b"})
      for (std::int64_t trial : {kStructuralTrial, std::int64_t{0}, std::int64_t{1}})
        for (const char* name : {"q", "k"}) {
          const PhiloxKey k = derive_key(seed, uuid, trial, name);
          keys.insert({k.k0, k.k1});
        }
  EXPECT_EQ(keys.size(), 2u * 2u * 3u * 2u);
  // Field boundaries are part of the hash: ("ab", "c") differs from ("a", "bc").
  const PhiloxKey a = derive_key(1, "ab", 0, "c"), b = derive_key(1, "a", 0, "bc");
  EXPECT_FALSE(a.k0 == b.k0 && a.k1 == b.k1);
}

}  // namespace
}  // namespace kh
