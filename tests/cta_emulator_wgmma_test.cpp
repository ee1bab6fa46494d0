// The host form of Hopper's warpgroup MMA (wgmma_on_host.h): every layout case of wgmma_cases.h
// (which gpu_wgmma_layouts_test.cu runs on the hardware) bit for bit, and the asynchrony rules a
// kernel must keep (no read of the accumulators before the wait, no operand overwritten before
// it, a wait before the thread exits).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cta_emulator.h"
#include "kh/core/error.h"
#include "test_support.h"
#include "wgmma_cases.h"
#include "wgmma_on_host.h"

namespace kh::test {
namespace {

using namespace khk_host;

constexpr int kThreads = 128;  // one warpgroup
constexpr uint32_t kOffsetB = wgmma_cases::kOffsetB;

using wgmma_cases::descriptor;

// Runs a case of wgmma_cases.h on the emulation: D [64][16] from every thread's fragment.
std::vector<float> run_case(const wgmma_cases::Case& c) {
  CtaEmulator emulator(kThreads, wgmma_cases::kSmemBytes);
  const std::vector<unsigned char> image = wgmma_cases::shared_image(c);
  std::vector<float> D(wgmma_cases::kM * wgmma_cases::kN, -1.0f);
  emulator.run([&](EmulatedCta& cta) {
    if (cta.thread() == 0) std::memcpy(cta.smem, image.data(), image.size());
    cta.sync();
    float d[wgmma_cases::kN / 2] = {};
    wgmma_fence();
    for (int s = 0; s < c.steps; ++s) {
      if (c.a_in_registers) {
        uint32_t regs[4];
        wgmma_cases::a_registers(c, cta.thread(), s, regs);
        wgmma_rs(d, wgmma_cases::kN, c.type, regs, c.desc_b(s), s > 0, c.scale_a, 1, c.trans_b);
      } else {
        wgmma_ss(d, wgmma_cases::kN, c.type, c.desc_a(s), c.desc_b(s), s > 0, c.scale_a, 1,
                 c.trans_a, c.trans_b);
      }
    }
    wgmma_commit();
    wgmma_wait(0);
    for (int i = 0; i < wgmma_cases::kN / 2; ++i)
      D[static_cast<std::size_t>(wgmma_cases::fragment_index(cta.thread(), i))] = d[i];
  });
  return D;
}

// Every case the GPU test runs, bit for bit against its expected product (the emulation sums
// exactly and rounds once per instruction, as expected() does).
class WgmmaLayoutOnHost : public ::testing::TestWithParam<std::size_t> {};

TEST_P(WgmmaLayoutOnHost, MatchesTheProduct) {
  const wgmma_cases::Case& c = wgmma_cases::cases()[GetParam()];
  EXPECT_EQ(run_case(c), wgmma_cases::expected(c)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, WgmmaLayoutOnHost,
                         ::testing::Range(std::size_t{0}, wgmma_cases::cases().size()),
                         [](const auto& info) {
                           return std::string(wgmma_cases::cases()[info.param].name);
                         });

// The asynchrony and warpgroup rules, each broken by one test: a warpgroup MMA of 64 x 8 x 16
// (the first case's operands); `issue` runs on every thread after the operands are stored.
void run_warpgroup(const std::function<void(float*)>& issue) {
  CtaEmulator emulator(kThreads, wgmma_cases::kSmemBytes);
  const std::vector<unsigned char> image = wgmma_cases::shared_image(wgmma_cases::cases()[0]);
  emulator.run([&](EmulatedCta& cta) {
    if (cta.thread() == 0) std::memcpy(cta.smem, image.data(), image.size());
    cta.sync();
    float d[4] = {};
    issue(d);
  });
}

void issue_first_step(float* d) {
  wgmma_ss(d, 8, kWgmmaBf16, descriptor(0, 16, 1024, 1), descriptor(kOffsetB, 16, 1024, 1), false,
           1, 1, false, false);
}

TEST(WgmmaOnHost, AccumulatorsReadBeforeTheWaitAreNan) {
  std::vector<float> early, late;
  run_warpgroup([&](float* d) {
    issue_first_step(d);
    wgmma_commit();
    const bool watched = EmulatedCta::current().thread() == 0;
    if (watched) early.assign(d, d + 4);
    wgmma_wait(0);
    if (watched) late.assign(d, d + 4);
  });
  ASSERT_EQ(early.size(), 4u);
  ASSERT_EQ(late.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isnan(early[i]));
    EXPECT_FALSE(std::isnan(late[i]));
  }
}

TEST(WgmmaOnHost, AnOperandOverwrittenBeforeTheWaitIsAnError) {
  const std::string message = error_of([] {
    run_warpgroup([](float* d) {
      EmulatedCta& cta = EmulatedCta::current();
      issue_first_step(d);
      wgmma_commit();
      if (cta.thread() == 0) std::memset(cta.smem + kOffsetB, 0, 16);  // B row 0, before the wait
      wgmma_wait(0);
    });
  });
  EXPECT_NE(message.find("changed between its issue and its wait"), std::string::npos) << message;
}

TEST(WgmmaOnHost, WaitsAtMostForTheGroupsItNames) {
  std::vector<float> after_first;
  run_warpgroup([&](float* d) {
    float other[4] = {};
    issue_first_step(d);
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
  const std::string message = error_of([] {
    run_warpgroup([](float* d) {
      issue_first_step(d);
      wgmma_commit();
    });
  });
  EXPECT_NE(message.find("did not wait for"), std::string::npos) << message;
}

TEST(WgmmaOnHost, AWarpThatSkipsAnMmaOfItsWarpgroupIsAnError) {
  const std::string message = error_of([] {
    run_warpgroup([](float* d) {
      if (EmulatedCta::current().thread() / 32 == 2) return;
      issue_first_step(d);
      wgmma_commit();
      wgmma_wait(0);
    });
  });
  EXPECT_NE(message.find("part at warpgroup-collective instruction 1"), std::string::npos)
      << message;
}

TEST(WgmmaOnHost, WarpsOfAWarpgroupMustShareTheDescriptors) {
  const std::string message = error_of([] {
    run_warpgroup([](float* d) {
      const uint32_t k = EmulatedCta::current().thread() / 32 == 3 ? 32 : 0;  // another k-step
      wgmma_ss(d, 8, kWgmmaBf16, descriptor(k, 16, 1024, 1), descriptor(kOffsetB + k, 16, 1024, 1),
               false, 1, 1, false, false);
      wgmma_commit();
      wgmma_wait(0);
    });
  });
  EXPECT_NE(message.find("part at warpgroup-collective instruction 1"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace kh::test
