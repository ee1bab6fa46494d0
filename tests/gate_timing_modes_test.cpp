// A second, faster timing mode in a gate's samples is counted per side and said, and a gate
// without one says nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/gate/timing_modes.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

// `rounds` rounds of 10 pairs at 10 us, with `a_fast` of A's and `b_fast` of B's at 5 us.
std::vector<WorkloadSamples> samples(int rounds, int a_fast, int b_fast) {
  WorkloadSamples w;
  w.workload = "w";
  for (int r = 0; r < rounds; ++r) {
    PairedRound round;
    for (int i = 0; i < 10; ++i) {
      round.a.push_back(i < a_fast ? 5e-6 : 10e-6 + 1e-8 * i);
      round.b.push_back(i < b_fast ? 5e-6 : 10e-6 + 1e-8 * i);
    }
    w.rounds.push_back(round);
  }
  return {w};
}

TEST(TimingModes, CountsTheFastSamplesOfEachSide) {
  const TimingModes m = fast_modes(samples(8, 0, 2));
  EXPECT_EQ(m.a_samples, 80u);
  EXPECT_EQ(m.b_samples, 80u);
  EXPECT_EQ(m.a_fast, 0u);
  EXPECT_EQ(m.b_fast, 16u);
  EXPECT_THAT(timing_modes_warning(m), HasSubstr("0.0 % of A's and 20.0 % of B's samples"));
}

TEST(TimingModes, OneModeSaysNothing) {
  EXPECT_EQ(timing_modes_warning(fast_modes(samples(8, 0, 0))), "");
  EXPECT_EQ(timing_modes_warning(fast_modes({})), "");
}

}  // namespace
}  // namespace kh
