// The CTA emulator the kernel emulation tests run on: lane exchanges, barriers that must be
// uniform, order reversal exposing a missing barrier, poisoned shared memory, errors from threads,
// waits on flags in shared memory and the deadlocks they can make.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
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

// Warp 0 produces `rounds` values into a one-slot mailbox, warp 1 consumes them: each side waits
// on a flag in shared memory (yielding while it is not its turn) and announces each flip.
// `producer_waits` false plants a bug: the producer does not wait for the mailbox to be emptied.
std::vector<int> mailbox(CtaEmulator::Order order, int rounds, bool producer_waits = true,
                         std::uint64_t lagging = 0) {
  CtaEmulator emulator(64, 2 * sizeof(int), order);
  emulator.set_lagging_warps(lagging);
  std::vector<int> got;
  emulator.run([&](EmulatedCta& cta) {
    volatile int* full = reinterpret_cast<int*>(cta.smem);
    volatile int* value = full + 1;
    if (cta.thread() == 0) *full = 0;
    cta.sync();
    for (int r = 0; r < rounds; ++r) {
      if (cta.thread() == 0) {  // the producer's lane
        while (producer_waits && *full != 0) cta.yield();
        *value = 10 * r + 1;
        *full = 1;
        cta.progress();
      } else if (cta.thread() == 32) {  // the consumer's lane
        while (*full != 1) cta.yield();
        got.push_back(static_cast<int>(*value));
        *full = 0;
        cta.progress();
      }
    }
  });
  return got;
}

TEST(CtaEmulator, ThreadsWaitingOnSharedFlagsHandOverInEitherOrder) {
  const std::vector<int> expected = {1, 11, 21, 31, 41};
  EXPECT_EQ(mailbox(CtaEmulator::Order::ascending, 5), expected);
  EXPECT_EQ(mailbox(CtaEmulator::Order::descending, 5), expected);
}

TEST(CtaEmulator, DeferredEventsRunWhenEveryThreadWaitsLatestFirst) {
  // Thread 0 defers two events, then waits until both have run: they run only once it waits,
  // and the second one first (as cp.async-triggered arrivals may land in any order).
  CtaEmulator emulator(32, 0);
  std::vector<int> ran;
  emulator.run([&](EmulatedCta& cta) {
    if (cta.thread() != 0) return;
    const auto record = [](void* arg) {
      auto* p = static_cast<std::pair<std::vector<int>*, int>*>(arg);
      p->first->push_back(p->second);
    };
    std::pair<std::vector<int>*, int> first{&ran, 1}, second{&ran, 2};
    cta.defer(record, &first);
    cta.defer(record, &second);
    EXPECT_TRUE(ran.empty());
    while (ran.size() < 2) cta.yield();
  });
  EXPECT_EQ(ran, (std::vector<int>{2, 1}));
}

// The message of the kh::Error a run throws ("" if it returns).
std::string run_error(CtaEmulator& emulator, const std::function<void(EmulatedCta&)>& program) {
  try {
    emulator.run(program);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Warps 0 and 1 each write their own value to one shared word, meet at a warp barrier, and read
// the word back: what lane 0 of each warp saw.
std::vector<float> shared_scratch_reads(bool switch_at_warp_barriers) {
  CtaEmulator emulator(64, sizeof(float));
  emulator.set_switch_at_warp_barriers(switch_at_warp_barriers);
  std::vector<float> seen(2);
  emulator.run([&](EmulatedCta& cta) {
    float* word = reinterpret_cast<float*>(cta.smem);
    const int warp = cta.thread() / 32;
    if (cta.lane() == 0) *word = static_cast<float>(warp);
    cta.sync_warp();
    if (cta.lane() == 0) seen[static_cast<std::size_t>(warp)] = *word;
  });
  return seen;
}

TEST(CtaEmulator, SwitchingAtWarpBarriersInterleavesWarpsOfOneRole) {
  // Run as far as it goes, each warp reads back its own write: the race stays hidden.
  EXPECT_EQ(shared_scratch_reads(false), (std::vector<float>{0.0f, 1.0f}));
  // Switching at the warp barrier, warp 1 writes between warp 0's write and its read.
  EXPECT_EQ(shared_scratch_reads(true), (std::vector<float>{1.0f, 1.0f}));
}

TEST(CtaEmulator, LaggingWarpsRunOnlyWhenTheOthersAreStuck) {
  // The handshake gives the same values with either warp lagging, in either order...
  const std::vector<int> expected = {1, 11, 21, 31, 41};
  EXPECT_EQ(mailbox(CtaEmulator::Order::ascending, 5, true, 0b10), expected);
  EXPECT_EQ(mailbox(CtaEmulator::Order::descending, 5, true, 0b01), expected);
  // ...and a producer that does not wait for the mailbox to be emptied overwrites values the
  // lagging consumer never reads, then waits for a flip that never comes.
  EXPECT_THROW(mailbox(CtaEmulator::Order::descending, 5, false, 0b10), Error);
}

TEST(CtaEmulator, AWaitNothingEndsIsADeadlock) {
  CtaEmulator emulator(64, sizeof(int));
  EXPECT_NE(run_error(emulator,
                      [](EmulatedCta& cta) {
                        volatile int* flag = reinterpret_cast<int*>(cta.smem);
                        if (cta.thread() == 0) *flag = 0;
                        cta.sync();
                        if (cta.thread() >= 32)
                          while (*flag == 0) cta.yield();  // nobody sets it
                      })
                .find("deadlock: 32 threads wait"),
            std::string::npos);
  // A wait at the CTA barrier while another warp yields forever is one too.
  EXPECT_NE(run_error(emulator,
                      [](EmulatedCta& cta) {
                        volatile int* flag = reinterpret_cast<int*>(cta.smem);
                        if (cta.thread() == 0) *flag = 0;
                        cta.sync();
                        if (cta.thread() < 32)
                          while (*flag == 0) cta.yield();
                        cta.sync();
                      })
                .find("32 at the CTA barrier"),
            std::string::npos);
}

TEST(CtaEmulator, AWarpBarrierWaitsForLanesThatYielded) {
  // Lane 5 waits for warp 1's flag while its warp's other lanes are already at a warp barrier.
  CtaEmulator emulator(64, sizeof(int));
  int passed = 0;
  emulator.run([&](EmulatedCta& cta) {
    volatile int* flag = reinterpret_cast<int*>(cta.smem);
    if (cta.thread() == 0) *flag = 0;
    cta.sync();
    if (cta.thread() == 5)
      while (*flag == 0) cta.yield();
    if (cta.thread() < 32) {
      cta.sync_warp();
      ++passed;
    } else if (cta.thread() == 40) {
      *flag = 1;
      cta.progress();
    }
  });
  EXPECT_EQ(passed, 32);
}

TEST(CtaEmulator, RefusesAPartialWarp) {
  EXPECT_THROW(CtaEmulator(48, 0), Error);
}

}  // namespace
}  // namespace kh::test
