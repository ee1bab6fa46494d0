// `kh state` end to end: a recorded profile becomes a state and a direction, in text and JSON, and
// a bad launch position is one clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

test::CommandResult kh(const std::string& args) {
  test::CommandResult r = test::run_command(std::string(KH_BINARY) + " " + args);
  r.out += r.err;
  return r;
}

const std::string kFixtures = (test::source_dir() / "tests/data/ncu").string();

TEST(StateCli, SyntheticProfileIsMemoryBoundWithItsDirection) {
  const auto r =
      kh("state " + kFixtures + "/synthetic_full_metrics.csv --floor-us 16 --knowledge " +
         (test::source_dir() / "knowledge/gdn.toml").string() + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["state"]["bottleneck"], "memory_bound");
  EXPECT_EQ(j["state"]["dominant_kernel"], "stream_rows");
  EXPECT_NEAR(j["state"]["headroom"].get<double>(), (18.5 + 2.25) / 16, 1e-9);
  EXPECT_EQ(j["direction"]["name"], "bulk_state_copies");
  EXPECT_EQ(j["kernels"].size(), 2u);
}

TEST(StateCli, ChosenLaunchesAndTextOutput) {
  const auto r =
      kh("state " + kFixtures + "/h200_dsa_attention_durations.csv --launch 6 --launch 7");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("split_kv_attention"));
  EXPECT_THAT(r.out, HasSubstr("state: unknown in split_kv_attention"));
  const auto bad = kh("state " + kFixtures + "/h200_dsa_attention_durations.csv --launch 8");
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.out, HasSubstr("--launch 8:"));
  EXPECT_THAT(bad.out, HasSubstr("holds launches 0 to 7"));
  const auto metrics = kh("state --metrics");
  EXPECT_THAT(metrics.out, HasSubstr("sm__throughput.avg.pct_of_peak_sustained_elapsed"));
}

}  // namespace
}  // namespace kh
