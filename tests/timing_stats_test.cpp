// Timing summaries: Python's median per trial, the mean of the trial medians, throttle flags from
// NVML clock event reasons, and the JSON record that keeps every sample.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/gpu/sample_stats.h"
#include "kh/gpu/timing_config.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
namespace reason = nvml_clock_reason;

std::vector<TimingSample> samples(const std::vector<double>& seconds) {
  std::vector<TimingSample> out;
  for (const double s : seconds) out.push_back(make_timing_sample(s, 1980, reason::kGpuIdle));
  return out;
}

TEST(TimingStats, MedianOfOddAndEvenCountsAsPythonStatistics) {
  EXPECT_EQ(median_of({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median_of({4.0, 1.0, 3.0, 2.0}), 2.5);  // mean of the two middle values
  EXPECT_EQ(median_of({7.0}), 7.0);
  EXPECT_EQ(median_of({1.0, 1e-3}), (1.0 + 1e-3) / 2);
  EXPECT_THROW(median_of({}), Error);
}

TEST(TimingStats, MeanOverTrialsOfTheMedians) {
  const TimingConfig config{0, 4, 3};
  const TimingResult r =
      summarize_timing(TimingMethod::kCupti, config,
                       {samples({1, 2, 3, 10}), samples({5, 7, 6, 5}), samples({0.5, 1.5, 1, 2})});
  EXPECT_EQ(r.trial_medians, (std::vector<double>{2.5, 5.5, 1.25}));
  EXPECT_DOUBLE_EQ(r.latency_seconds, (2.5 + 5.5 + 1.25) / 3);
  EXPECT_EQ(r.trials.size(), 3u);  // every sample kept
  EXPECT_EQ(r.trials[0][3].seconds, 10);
  EXPECT_EQ(r.config, config);
  EXPECT_EQ(mean_of(std::vector<double>{1, 2, 6}), 3);
}

TEST(TimingStats, SampleCountsMustMatchTheConfig) {
  const TimingConfig config{1, 2, 2};
  EXPECT_THROW(summarize_timing(TimingMethod::kEvents, config, {samples({1, 2})}), Error);
  EXPECT_THROW(summarize_timing(TimingMethod::kEvents, config, {samples({1, 2}), samples({1})}),
               Error);
  EXPECT_NO_THROW(
      summarize_timing(TimingMethod::kEvents, config, {samples({1, 2}), samples({3, 4})}));
}

TEST(TimingStats, NvmlReasonBitsAreThoseOfNvmlH) {
  EXPECT_EQ(reason::kGpuIdle, 0x1u);
  EXPECT_EQ(reason::kApplicationsClocksSetting, 0x2u);
  EXPECT_EQ(reason::kSwPowerCap, 0x4u);
  EXPECT_EQ(reason::kHwSlowdown, 0x8u);
  EXPECT_EQ(reason::kSyncBoost, 0x10u);
  EXPECT_EQ(reason::kSwThermalSlowdown, 0x20u);
  EXPECT_EQ(reason::kHwThermalSlowdown, 0x40u);
  EXPECT_EQ(reason::kHwPowerBrakeSlowdown, 0x80u);
  EXPECT_EQ(reason::kDisplayClockSetting, 0x100u);
}

TEST(TimingStats, ThrottleFlagIgnoresIdleApplicationAndDisplayClocksOnly) {
  EXPECT_FALSE(is_throttled(0));
  EXPECT_FALSE(is_throttled(reason::kGpuIdle));
  EXPECT_FALSE(is_throttled(reason::kApplicationsClocksSetting));
  EXPECT_FALSE(is_throttled(reason::kDisplayClockSetting));
  EXPECT_FALSE(is_throttled(reason::kGpuIdle | reason::kApplicationsClocksSetting |
                            reason::kDisplayClockSetting));
  for (const std::uint64_t bit :
       {reason::kSwPowerCap, reason::kHwSlowdown, reason::kSyncBoost, reason::kSwThermalSlowdown,
        reason::kHwThermalSlowdown, reason::kHwPowerBrakeSlowdown, std::uint64_t{0x200}}) {
    EXPECT_TRUE(is_throttled(bit)) << bit;
    EXPECT_TRUE(is_throttled(bit | reason::kApplicationsClocksSetting)) << bit;
  }
  EXPECT_TRUE(make_timing_sample(1e-5, 1500, reason::kSwPowerCap).throttled);
  EXPECT_FALSE(make_timing_sample(1e-5, 1980, reason::kApplicationsClocksSetting).throttled);
  EXPECT_EQ(clock_reason_names(0), "none");
  EXPECT_EQ(clock_reason_names(reason::kSwPowerCap | reason::kHwSlowdown | 0x400),
            "sw_power_cap|hw_slowdown|0x400");
}

TEST(TimingStats, ThrottledSamplesAreCounted) {
  std::vector<TimingSample> trial = samples({1, 2, 3});
  trial[1] = make_timing_sample(2, 1200, reason::kHwThermalSlowdown);
  std::vector<TimingSample> other = samples({1, 2, 3});
  other[0] = make_timing_sample(1, 1400, reason::kSwPowerCap | reason::kGpuIdle);
  const TimingResult r =
      summarize_timing(TimingMethod::kCupti, TimingConfig{0, 3, 2}, {trial, other});
  EXPECT_EQ(r.throttled_samples, 2);
}

TimingResult example_result() {
  std::vector<TimingSample> first = samples({1.25e-5, 1.5e-5, 1.125e-5});
  first[2] = make_timing_sample(1.125e-5, 1410.5, reason::kSwThermalSlowdown);
  return summarize_timing(TimingMethod::kGraph, TimingConfig{2, 3, 2},
                          {first, samples({2e-5, 0.1 + 0.2, 3e-5})});
}

TEST(TimingStats, JsonRecordsTheMethodAndEverySample) {
  const TimingResult r = example_result();
  const Json j = timing_result_json(r);
  EXPECT_EQ(j.at("method"), "graph");
  EXPECT_EQ(j.at("config").at("warmup"), 2);
  EXPECT_EQ(j.at("config").at("iterations"), 3);
  EXPECT_EQ(j.at("config").at("trials"), 2);
  EXPECT_EQ(j.at("latency_seconds").get<double>(), r.latency_seconds);
  EXPECT_EQ(j.at("trial_medians_seconds").size(), 2u);
  EXPECT_EQ(j.at("throttled_samples"), 1);
  ASSERT_EQ(j.at("trials").size(), 2u);
  ASSERT_EQ(j.at("trials")[0].size(), 3u);
  const Json& s = j.at("trials")[0][2];
  EXPECT_EQ(s.at("seconds").get<double>(), 1.125e-5);
  EXPECT_EQ(s.at("sm_clock_mhz").get<double>(), 1410.5);
  EXPECT_EQ(s.at("throttle_reasons"), reason::kSwThermalSlowdown);
  EXPECT_EQ(s.at("throttled"), true);
}

TEST(TimingStats, JsonRoundTripKeepsEveryBit) {
  const TimingResult r = example_result();
  const std::string text = timing_result_json(r).dump();
  const Json parsed = parse_json(text, "timing.json");
  const TimingResult back = timing_result_from_json(JsonCursor(parsed, "timing.json"));
  EXPECT_EQ(back.method, r.method);
  EXPECT_EQ(back.config, r.config);
  EXPECT_EQ(back.trials, r.trials);  // 0.1 + 0.2 survives text exactly
  EXPECT_EQ(back.trial_medians, r.trial_medians);
  EXPECT_EQ(back.latency_seconds, r.latency_seconds);
  EXPECT_EQ(back.throttled_samples, r.throttled_samples);
}

TEST(TimingStats, JsonWithABadMethodOrMissingSamplesIsRejected) {
  Json j = timing_result_json(example_result());
  j["method"] = "nsys";
  try {
    timing_result_from_json(JsonCursor(j, "t.json"));
    FAIL() << "expected kh::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("t.json: method"));
    EXPECT_THAT(e.what(), HasSubstr("\"nsys\""));
  }
  Json short_trial = timing_result_json(example_result());
  short_trial["trials"][1].erase(0);
  EXPECT_THROW(timing_result_from_json(JsonCursor(short_trial, "t.json")), Error);
}

}  // namespace
}  // namespace kh
