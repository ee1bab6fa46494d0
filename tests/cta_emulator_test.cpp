// The CTA emulator the kernel emulation tests run on: lane exchanges, barriers that must be
// uniform, order reversal exposing a missing barrier, poisoned shared memory, errors from threads.
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "cta_emulator.h"
#include "kh/core/error.h"

namespace kh::test {
namespace {

TEST(CtaEmulator, ShflXorButterflySumsEveryLaneOfAWarp) {
  CtaEmulator emulator(64, 0);
  std::vector<float> sums(64);
  emulator.run([&](EmulatedCta& cta) {
    float x = static_cast<float>(cta.thread());
    for (int offset = 16; offset > 0; offset /= 2) x += cta.shfl_xor(x, offset);
    sums[static_cast<std::size_t>(cta.thread())] = x;
  });
  for (int t = 0; t < 64; ++t)  // lanes 0..31 sum to 496, lanes 32..63 to 1520
    EXPECT_EQ(sums[static_cast<std::size_t>(t)], t < 32 ? 496.0f : 1520.0f) << t;
  EXPECT_EQ(emulator.barriers(), 0);  // lane exchanges wait for the warp only
}

// Thread t writes smem[t] and reads smem[t ^ 1], with or without a barrier between.
std::vector<float> neighbour_reads(bool with_barrier, CtaEmulator::Order order) {
  CtaEmulator emulator(32, 32 * sizeof(float), order);
  std::vector<float> seen(32);
  emulator.run([&](EmulatedCta& cta) {
    float* s = reinterpret_cast<float*>(cta.smem);
    const int t = cta.thread();
    s[t] = static_cast<float>(t);
    if (with_barrier) cta.sync();
    seen[static_cast<std::size_t>(t)] = s[t ^ 1];
  });
  return seen;
}

TEST(CtaEmulator, ReversedOrderExposesAMissingBarrier) {
  EXPECT_EQ(neighbour_reads(true, CtaEmulator::Order::ascending),
            neighbour_reads(true, CtaEmulator::Order::descending));
  EXPECT_NE(neighbour_reads(false, CtaEmulator::Order::ascending),
            neighbour_reads(false, CtaEmulator::Order::descending));
}

TEST(CtaEmulator, UnwrittenSharedMemoryReadsAsNan) {
  CtaEmulator emulator(32, 64);
  float seen = 0.0f;
  emulator.run([&](EmulatedCta& cta) {
    if (cta.thread() == 3) std::memcpy(&seen, cta.smem + 16, sizeof seen);
  });
  EXPECT_TRUE(std::isnan(seen));
}

TEST(CtaEmulator, DivergentBarriersAreAnError) {
  CtaEmulator emulator(32, 0);
  EXPECT_THROW(emulator.run([](EmulatedCta& cta) {
                 if (cta.thread() != 5) cta.sync();
               }),
               Error);
  EXPECT_THROW(emulator.run([](EmulatedCta& cta) {
                 cta.sync();
                 if (cta.thread() == 0) cta.sync();
                 cta.sync();
               }),
               Error);
  // The emulator stays usable after an error.
  int ran = 0;
  emulator.run([&](EmulatedCta& cta) {
    cta.sync();
    ++ran;
  });
  EXPECT_EQ(ran, 32);
}

TEST(CtaEmulator, WarpsDriftApartBetweenCtaBarriers) {
  // Warp 0 exchanges lanes three times while warp 1 exchanges none: legal, since lane exchanges
  // wait for the warp only. Both then meet at the CTA barrier.
  CtaEmulator emulator(64, 0);
  std::vector<float> seen(64);
  emulator.run([&](EmulatedCta& cta) {
    float x = static_cast<float>(cta.lane());
    if (cta.thread() < 32)
      for (int i = 0; i < 3; ++i) x = cta.shfl_xor(x, 1);
    cta.sync();
    seen[static_cast<std::size_t>(cta.thread())] = x;
  });
  EXPECT_EQ(emulator.barriers(), 1);
  EXPECT_EQ(seen[0], 1.0f);   // odd number of swaps with lane 1
  EXPECT_EQ(seen[32], 0.0f);  // warp 1 kept its own value
}

TEST(CtaEmulator, AShuffleByPartOfAWarpIsAnError) {
  CtaEmulator emulator(32, 0);
  EXPECT_THROW(emulator.run([](EmulatedCta& cta) {
                 float x = 1.0f;
                 if (cta.lane() < 16) x = cta.shfl_xor(x, 1);
                 cta.sync();
               }),
               Error);
}

TEST(CtaEmulator, PublishAndPeerSeeEveryLaneOfTheWarp) {
  CtaEmulator emulator(64, 0);
  std::vector<int> sums(64);
  emulator.run(
      [&](EmulatedCta& cta) {
        cta.publish(cta.thread() * 10);
        int sum = 0;
        for (int l = 0; l < 32; ++l) sum += cta.peer<int>(l);
        cta.done();
        sums[static_cast<std::size_t>(cta.thread())] = sum + static_cast<int>(cta.block());
      },
      7);
  EXPECT_EQ(sums[5], 4960 + 7);    // 10 * (0 + ... + 31), block 7
  EXPECT_EQ(sums[40], 15200 + 7);  // 10 * (32 + ... + 63)
}

TEST(CtaEmulator, AThreadsExceptionReachesTheCaller) {
  CtaEmulator emulator(32, 0);
  EXPECT_THROW(emulator.run([](EmulatedCta& cta) {
                 cta.sync();
                 if (cta.thread() == 7) throw std::runtime_error("thread 7");
                 cta.sync();
               }),
               std::runtime_error);
}

TEST(CtaEmulator, RefusesAPartialWarp) {
  EXPECT_THROW(CtaEmulator(48, 0), Error);
}

}  // namespace
}  // namespace kh::test
