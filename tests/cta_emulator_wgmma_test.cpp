// The host form of Hopper's warpgroup MMA (wgmma_on_host.h): each operand layout placed by its own
// formula (the swizzles as 16-byte chunk permutations per row, not as address bits), the product
// against a plain loop, and the asynchrony rules a kernel must keep (no read of the accumulators
// before the wait, no operand overwritten before it, a wait before the thread exits).
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cta_emulator.h"
#include "kh/core/error.h"
#include "operand_bits.h"
#include "wgmma_on_host.h"

namespace kh::test {
namespace {

using namespace khk_host;

constexpr int kThreads = 128;  // one warpgroup
constexpr int kM = 64;
constexpr std::size_t kSmemBytes = 16384;
constexpr uint32_t kOffsetB = 8192;  // B's operand starts here, A's at 0

uint64_t descriptor(uint32_t start, uint32_t leading, uint32_t stride, int swizzle_mode) {
  return static_cast<uint64_t>(start >> 4) | static_cast<uint64_t>(leading >> 4) << 16 |
         static_cast<uint64_t>(stride >> 4) << 32 | static_cast<uint64_t>(swizzle_mode) << 62;
}

// A matrix of `rows` x `k` values (bf16 or tf32 exactly) and the byte offset of each element in
// shared memory relative to the operand's start.
struct Operand {
  int rows, k;
  bool tf32;
  std::function<uint32_t(int mn, int k)> place;
  std::vector<float> v;  // row-major rows x k
  float at(int r, int c) const { return v[static_cast<std::size_t>(r * k + c)]; }
};

Operand make_operand(int rows, int k, bool tf32, std::function<uint32_t(int, int)> place,
                     unsigned seed) {
  Operand op{rows, k, tf32, std::move(place), {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int i = 0; i < rows * k; ++i) {
    uint32_t bits;
    const float x = u(rng);
    std::memcpy(&bits, &x, sizeof bits);
    op.v.push_back(tf32 ? tf32_value(bits) : bf16_at(bits & 0xffff0000u, 1));
  }
  return op;
}

void store(unsigned char* smem, uint32_t base, const Operand& op) {
  for (int r = 0; r < op.rows; ++r)
    for (int c = 0; c < op.k; ++c) {
      uint32_t bits;
      const float x = op.at(r, c);
      std::memcpy(&bits, &x, sizeof bits);
      const uint32_t off = base + op.place(r, c);
      if (op.tf32) std::memcpy(smem + off, &bits, 4);
      else {
        const uint16_t hi = static_cast<uint16_t>(bits >> 16);
        std::memcpy(smem + off, &hi, 2);
      }
    }
}

// Thread 0 stores the operands; then `issue` runs on every thread; D[64][n] from the fragments.
std::vector<float> run_warpgroup(const Operand& a, const Operand& b, int n,
                                 const std::function<void(float*)>& issue) {
  CtaEmulator emulator(kThreads, kSmemBytes);
  std::vector<float> D(static_cast<std::size_t>(kM * n), -1.0f);
  emulator.run([&](EmulatedCta& cta) {
    if (cta.thread() == 0) {
      store(cta.smem, 0, a);
      store(cta.smem, kOffsetB, b);
    }
    cta.sync();
    std::vector<float> d(static_cast<std::size_t>(n / 2), 0.0f);
    issue(d.data());
    const int warp = cta.thread() / 32, lane = cta.lane();
    for (int i = 0; i < n / 2; ++i) {
      const int row = 16 * warp + lane / 4 + 8 * (i % 4 / 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
      D[static_cast<std::size_t>(row * n + col)] = d[static_cast<std::size_t>(i)];
    }
  });
  return D;
}

// D = A B^T over k-steps of `step` values, rounded after each step as the instruction does.
std::vector<float> expected(const Operand& a, const Operand& b, int n, int step, int scale = 1) {
  std::vector<float> D(static_cast<std::size_t>(kM * n), 0.0f);
  for (int r = 0; r < kM; ++r)
    for (int c = 0; c < n; ++c)
      for (int k0 = 0; k0 < a.k; k0 += step) {
        double s = 0.0;
        for (int k = k0; k < k0 + step; ++k) s += static_cast<double>(a.at(r, k)) * b.at(c, k);
        float& d = D[static_cast<std::size_t>(r * n + c)];
        d = static_cast<float>(d + scale * s);
      }
  return D;
}

// K-major rows of `line` bytes, 8-row groups `group` bytes apart, the 16-byte chunks of row r
// permuted by chunk ^ f(r).
std::function<uint32_t(int, int)> k_major(int bytes, int line, int group,
                                         std::function<int(int)> perm) {
  return [=](int r, int k) {
    const int chunk = k * bytes / 16, within = k * bytes % 16;
    return static_cast<uint32_t>(r / 8 * group + r % 8 * line + (chunk ^ perm(r % 8)) * 16 + within);
  };
}

TEST(WgmmaOnHost, Bf16KMajorSwizzle128OverFourKSteps) {
  const int n = 16;
  auto sw128 = k_major(2, 128, 1024, [](int r) { return r; });
  const Operand a = make_operand(kM, 64, false, sw128, 1), b = make_operand(n, 64, false, sw128, 2);
  const auto D = run_warpgroup(a, b, n, [&](float* d) {
    wgmma_fence();
    for (int k = 0; k < 4; ++k)  // 16 values, 32 bytes further along the line each
      wgmma_ss(d, n, kWgmmaBf16, descriptor(32u * k, 16, 1024, 1),
               descriptor(kOffsetB + 32u * k, 16, 1024, 1), k > 0, 1, 1, false, false);
    wgmma_commit();
    wgmma_wait(0);
  });
  EXPECT_EQ(D, expected(a, b, n, 16));
}

TEST(WgmmaOnHost, Tf32KMajorSwizzle128AndNegatedScale) {
  const int n = 24;
  auto sw128 = k_major(4, 128, 1024, [](int r) { return r; });
  const Operand a = make_operand(kM, 8, true, sw128, 3), b = make_operand(n, 8, true, sw128, 4);
  const auto D = run_warpgroup(a, b, n, [&](float* d) {
    wgmma_ss(d, n, kWgmmaTf32, descriptor(0, 16, 1024, 1), descriptor(kOffsetB, 16, 1024, 1),
             false, -1, 1, false, false);
    wgmma_commit();
    wgmma_wait(0);
  });
  EXPECT_EQ(D, expected(a, b, n, 8, -1));
}

TEST(WgmmaOnHost, Bf16KMajorSwizzle64And32AndNoSwizzle) {
  const int n = 8;
  struct Case {
    int mode, line;
    std::function<int(int)> perm;
  };
  const Case cases[] = {{2, 64, [](int r) { return r / 2; }}, {3, 32, [](int r) { return r / 4; }}};
  for (const Case& c : cases) {
    auto place = k_major(2, c.line, 8 * c.line, c.perm);
    const Operand a = make_operand(kM, 16, false, place, 5), b = make_operand(n, 16, false, place, 6);
    const auto D = run_warpgroup(a, b, n, [&](float* d) {
      wgmma_ss(d, n, kWgmmaBf16, descriptor(0, 16, 8 * c.line, c.mode),
               descriptor(kOffsetB, 16, 8 * c.line, c.mode), false, 1, 1, false, false);
      wgmma_commit();
      wgmma_wait(0);
    });
    EXPECT_EQ(D, expected(a, b, n, 16)) << "swizzle mode " << c.mode;
  }
  // Core matrices: 8 rows x 16 bytes, the two along K 128 bytes apart, 8-row groups 256 apart.
  auto core = [](int r, int k) { return static_cast<uint32_t>(r / 8 * 256 + k / 8 * 128 + r % 8 * 16 + k % 8 * 2); };
  const Operand a = make_operand(kM, 16, false, core, 7), b = make_operand(n, 16, false, core, 8);
  const auto D = run_warpgroup(a, b, n, [&](float* d) {
    wgmma_ss(d, n, kWgmmaBf16, descriptor(0, 128, 256, 0), descriptor(kOffsetB, 128, 256, 0),
             false, 1, 1, false, false);
    wgmma_commit();
    wgmma_wait(0);
  });
  EXPECT_EQ(D, expected(a, b, n, 16));
}

TEST(WgmmaOnHost, Bf16MnMajorOperands) {
  const int n = 16;
  // A M-major in the 64-byte swizzle: two atoms of 32 M values (2048 bytes apart); in each, K
  // index k is a 64-byte line (8-line groups 512 bytes apart), chunks permuted by k / 2.
  auto a_place = [](int m, int k) {
    return static_cast<uint32_t>(m / 32 * 2048 + k / 8 * 512 + k % 8 * 64 +
                                 ((m % 32 / 8) ^ (k % 8 / 2)) * 16 + m % 8 * 2);
  };
  // B N-major in the 128-byte swizzle, its 16 N values in one 128-byte line per K index
  // (8-line groups 1024 bytes apart), chunks permuted by k.
  auto b_place = [](int nn, int k) {
    return static_cast<uint32_t>(k / 8 * 1024 + k % 8 * 128 + ((nn / 8) ^ (k % 8)) * 16 + nn % 8 * 2);
  };
  const Operand a = make_operand(kM, 32, false, a_place, 9), b = make_operand(n, 32, false, b_place, 10);
  const auto D = run_warpgroup(a, b, n, [&](float* d) {
    for (int k = 0; k < 2; ++k)  // 16 K lines further each step
      wgmma_ss(d, n, kWgmmaBf16, descriptor(1024u * k, 2048, 512, 2),
               descriptor(kOffsetB + 2048u * k, 4096, 1024, 1), k > 0, 1, 1, true, true);
    wgmma_commit();
    wgmma_wait(0);
  });
  EXPECT_EQ(D, expected(a, b, n, 16));
}

TEST(WgmmaOnHost, Bf16AFromRegisters) {
  const int n = 16;
  auto sw128 = k_major(2, 128, 1024, [](int r) { return r; });
  const Operand a = make_operand(kM, 16, false, sw128, 11), b = make_operand(n, 16, false, sw128, 12);
  auto pack = [&](int r, int k) {
    uint32_t lo, hi;
    const float x = a.at(r, k), y = a.at(r, k + 1);
    std::memcpy(&lo, &x, 4);
    std::memcpy(&hi, &y, 4);
    return (lo >> 16) | (hi & 0xffff0000u);
  };
  const auto D = run_warpgroup(a, b, n, [&](float* d) {
    const EmulatedCta& cta = EmulatedCta::current();
    const int row = 16 * (cta.thread() / 32) + cta.lane() / 4, c = cta.lane() % 4;
    const uint32_t regs[4] = {pack(row, 2 * c), pack(row + 8, 2 * c), pack(row, 2 * c + 8),
                              pack(row + 8, 2 * c + 8)};
    wgmma_rs(d, n, kWgmmaBf16, regs, descriptor(kOffsetB, 16, 1024, 1), false, 1, 1, false);
    wgmma_commit();
    wgmma_wait(0);
  });
  EXPECT_EQ(D, expected(a, b, n, 16));
}

// The asynchrony rules: each kernel below breaks one.
const auto kSw128 = k_major(2, 128, 1024, [](int r) { return r; });

TEST(WgmmaOnHost, AccumulatorsReadBeforeTheWaitAreNan) {
  const Operand a = make_operand(kM, 16, false, kSw128, 13), b = make_operand(8, 16, false, kSw128, 14);
  std::vector<float> early;
  run_warpgroup(a, b, 8, [&](float* d) {
    wgmma_ss(d, 8, kWgmmaBf16, descriptor(0, 16, 1024, 1), descriptor(kOffsetB, 16, 1024, 1),
             false, 1, 1, false, false);
    wgmma_commit();
    if (EmulatedCta::current().thread() == 0) early.assign(d, d + 4);
    wgmma_wait(0);
  });
  ASSERT_EQ(early.size(), 4u);
  for (float x : early) EXPECT_TRUE(std::isnan(x));
}

TEST(WgmmaOnHost, AnOperandOverwrittenBeforeTheWaitIsAnError) {
  const Operand a = make_operand(kM, 16, false, kSw128, 15), b = make_operand(8, 16, false, kSw128, 16);
  try {
    run_warpgroup(a, b, 8, [&](float* d) {
      EmulatedCta& cta = EmulatedCta::current();
      wgmma_ss(d, 8, kWgmmaBf16, descriptor(0, 16, 1024, 1), descriptor(kOffsetB, 16, 1024, 1),
               false, 1, 1, false, false);
      wgmma_commit();
      if (cta.thread() == 0) std::memset(cta.smem + kOffsetB, 0, 16);  // B row 0, before the wait
      wgmma_wait(0);
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed between its issue and its wait"), std::string::npos)
        << e.what();
  }
}

TEST(WgmmaOnHost, WaitsAtMostForTheGroupsItNames) {
  const Operand a = make_operand(kM, 32, false, kSw128, 17), b = make_operand(8, 32, false, kSw128, 18);
  std::vector<float> after_first;
  const auto D = run_warpgroup(a, b, 8, [&](float* d) {
    float other[4] = {0, 0, 0, 0};
    wgmma_ss(d, 8, kWgmmaBf16, descriptor(0, 16, 1024, 1), descriptor(kOffsetB, 16, 1024, 1),
             false, 1, 1, false, false);
    wgmma_commit();
    wgmma_ss(other, 8, kWgmmaBf16, descriptor(32, 16, 1024, 1),
             descriptor(kOffsetB + 32, 16, 1024, 1), false, 1, 1, false, false);
    wgmma_commit();
    wgmma_wait(1);  // the first group only
    if (EmulatedCta::current().thread() == 0) after_first = {d[0], other[0]};
    wgmma_wait(0);
  });
  ASSERT_EQ(after_first.size(), 2u);
  EXPECT_FALSE(std::isnan(after_first[0]));
  EXPECT_TRUE(std::isnan(after_first[1]));
}

TEST(WgmmaOnHost, ExitingWithoutWaitingIsAnError) {
  const Operand a = make_operand(kM, 16, false, kSw128, 19), b = make_operand(8, 16, false, kSw128, 20);
  EXPECT_THROW(run_warpgroup(a, b, 8,
                             [&](float* d) {
                               wgmma_ss(d, 8, kWgmmaBf16, descriptor(0, 16, 1024, 1),
                                        descriptor(kOffsetB, 16, 1024, 1), false, 1, 1, false,
                                        false);
                               wgmma_commit();
                             }),
               Error);
}

}  // namespace
}  // namespace kh::test
