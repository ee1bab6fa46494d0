// Nsight Compute CSV into kernel profiles: a real capture from one H200 (durations only), a full
// metric set in ncu's format, and malformed input with errors that say where.
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/ctl/ncu_csv.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

std::string fixture(const char* name) {
  return read_text_file(test::source_dir() / "tests/data/ncu" / name);
}

TEST(NcuCsv, RealH200CaptureGivesEveryLaunchInOrderWithItsDuration) {
  const auto launches = parse_ncu_csv(fixture("h200_dsa_attention_durations.csv"), "capture");
  ASSERT_EQ(launches.size(), 8u);
  EXPECT_EQ(launches[0].name, "split_kv_attention(AttentionArgs, SplitPartials, int)");
  EXPECT_DOUBLE_EQ(launches[0].duration_seconds, 7136e-9);  // "7,136" ns
  EXPECT_EQ(launches[1].name, "merge_splits(AttentionArgs, SplitPartials, int)");
  EXPECT_DOUBLE_EQ(launches[1].duration_seconds, 6528e-9);
  EXPECT_DOUBLE_EQ(launches[0].grid_threads, 128.0 * 16);
  EXPECT_DOUBLE_EQ(launches[7].grid_threads, 64.0 * 256);
  EXPECT_FALSE(launches[0].sm_throughput_pct.has_value()) << "not measured in this capture";
}

TEST(NcuCsv, FullMetricSetIsNormalisedAndDerived) {
  const auto k = parse_ncu_csv(fixture("synthetic_full_metrics.csv"), "synthetic");
  ASSERT_EQ(k.size(), 2u);
  EXPECT_DOUBLE_EQ(k[0].duration_seconds, 18.5e-6);
  EXPECT_DOUBLE_EQ(*k[0].memory_throughput_pct, 83.2);
  EXPECT_DOUBLE_EQ(*k[0].sm_throughput_pct, 21.4);
  EXPECT_DOUBLE_EQ(*k[0].waves_per_sm, 4.85);
  EXPECT_DOUBLE_EQ(*k[0].sectors_per_request, 16.0);
  EXPECT_EQ(*k[0].occupancy_limiter, "registers");  // 12 blocks, the fewest
  EXPECT_DOUBLE_EQ(k[0].grid_threads, 128.0 * 1024) << "\"(1,024, 1, 1)\": a thousands separator";
  EXPECT_DOUBLE_EQ(k[1].duration_seconds, 2250e-9);
  EXPECT_DOUBLE_EQ(*k[1].local_memory_bytes, 1.5e6 + 500e3);
  EXPECT_FALSE(k[1].achieved_occupancy_pct.has_value()) << "\"n/a\" is no number";
  EXPECT_EQ(*k[1].occupancy_limiter, "registers");
}

TEST(NcuCsv, MalformedInputNamesTheLineAndTheProblem) {
  EXPECT_THROW(
      {
        try {
          parse_ncu_csv("just the program's output\n", "run.log");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("run.log: no ncu CSV found"), std::string::npos);
          throw;
        }
      },
      Error);
  const std::string header =
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  EXPECT_THROW(
      {
        try {
          parse_ncu_csv(header + "\"0\",\"k\",\"gpu__time_duration.sum\",\"ns\"\n", "short.csv");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("short.csv:2: 4 fields where the header has 5"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW(parse_ncu_csv("\"ID\",\"Kernel Name\"\n", "page.csv"), Error);  // raw page
}

}  // namespace
}  // namespace kh::ctl
