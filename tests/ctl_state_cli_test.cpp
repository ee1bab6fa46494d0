// `kh state` end to end: a recorded profile becomes a state and a direction, in text and JSON, and
// a bad launch position is one clear error.
#include <fstream>

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

TEST(StateCli, FloorOfTheProfiledWorkloadAsKhRooflineComputesIt) {
  test::ScopedTempDir dir;
  const auto ceilings = dir.path() / "ceilings.json";
  // The H200 ceilings of bench/results/2026-11-30_dsa_attention_h200.json.
  std::ofstream(ceilings) << R"({"gpu": "NVIDIA H200", "copy_bytes_per_second": 4264967514502.9863,
    "bf16_flops_per_second": 887510273681219.6, "fp8_flops_per_second": 1750512256681767.5,
    "fp32_flops_per_second": 64952038083855.61, "empty_kernel_seconds": 5.44e-07,
    "gather_latency_seconds": 3.3388e-07})";
  const std::string common = "state " + kFixtures +
                             "/h200_dsa_attention_durations.csv --launch 6 --launch 7 --root " +
                             test::source_dir().string() + " --ceilings " + ceilings.string() +
                             " -d dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
  const auto r = kh(common + " -w 12 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const Json j = Json::parse(r.out);
  // Workload 12: 8 tokens x 2048 scattered rows, 18.96 MB: 4.446 us at 4.26 TB/s.
  EXPECT_NEAR(j["floor_seconds"].get<double>(), 4.446e-6, 0.01e-6);
  EXPECT_NEAR(j["state"]["headroom"].get<double>(), (11968 + 6784) * 1e-9 / 4.446e-6, 0.01);
  const auto both = kh(common + " -w 12 --floor-us 3");
  EXPECT_NE(both.status, 0);
  EXPECT_THAT(both.out, HasSubstr("not both"));
  const auto missing = kh(common + " -w 99");
  EXPECT_NE(missing.status, 0);
  EXPECT_THAT(missing.out, HasSubstr("--workload 99: no workload"));
}

}  // namespace
}  // namespace kh
