#include "kh/gpu/sample_stats.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "kh/core/error.h"

namespace kh {
namespace {

constexpr std::pair<std::uint64_t, std::string_view> kClockReasonNames[] = {
    {nvml_clock_reason::kGpuIdle, "gpu_idle"},
    {nvml_clock_reason::kApplicationsClocksSetting, "applications_clocks_setting"},
    {nvml_clock_reason::kSwPowerCap, "sw_power_cap"},
    {nvml_clock_reason::kHwSlowdown, "hw_slowdown"},
    {nvml_clock_reason::kSyncBoost, "sync_boost"},
    {nvml_clock_reason::kSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvml_clock_reason::kHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvml_clock_reason::kHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvml_clock_reason::kDisplayClockSetting, "display_clock_setting"},
};

Json sample_json(const TimingSample& s) {
  return Json{{"seconds", s.seconds},
              {"sm_clock_mhz", s.sm_clock_mhz},
              {"throttle_reasons", s.throttle_reasons},
              {"throttled", s.throttled}};
}

TimingSample sample_from_json(const JsonCursor& c) {
  c.expect_object();
  TimingSample s;
  s.seconds = c.at("seconds").as_number();
  s.sm_clock_mhz = c.at("sm_clock_mhz").as_number();
  const JsonCursor reasons = c.at("throttle_reasons");
  const std::int64_t bits = reasons.as_int();
  if (bits < 0) reasons.fail_here("expected a non-negative bit mask");
  s.throttle_reasons = static_cast<std::uint64_t>(bits);
  s.throttled = c.at("throttled").as_bool();
  return s;
}

int int_field(const JsonCursor& c) {
  const std::int64_t v = c.as_int();
  if (v < 0 || v > 1'000'000'000) c.fail_here(fmt::format("{} is out of range", v));
  return static_cast<int>(v);
}

}  // namespace

bool is_throttled(std::uint64_t clock_reasons) {
  return (clock_reasons & ~kNonThrottlingClockReasons) != 0;
}

std::string clock_reason_names(std::uint64_t clock_reasons) {
  if (clock_reasons == 0) return "none";
  std::string out;
  auto add = [&out](std::string_view name) {
    if (!out.empty()) out += '|';
    out += name;
  };
  std::uint64_t unknown = clock_reasons;
  for (const auto& [bit, name] : kClockReasonNames) {
    if (clock_reasons & bit) add(name);
    unknown &= ~bit;
  }
  if (unknown != 0) add(fmt::format("{:#x}", unknown));
  return out;
}

TimingSample make_timing_sample(double seconds, double sm_clock_mhz, std::uint64_t clock_reasons) {
  return TimingSample{seconds, sm_clock_mhz, clock_reasons, is_throttled(clock_reasons)};
}

double median_of(std::vector<double> values) {
  if (values.empty()) fail("median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n % 2 == 1) return values[n / 2];
  return (values[n / 2 - 1] + values[n / 2]) / 2;
}

double mean_of(std::span<const double> values) {
  if (values.empty()) fail("mean of no values");
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

TimingResult summarize_timing(TimingMethod method, const TimingConfig& config,
                              std::vector<std::vector<TimingSample>> trials) {
  check_timing_config(config);
  if (trials.size() != static_cast<std::size_t>(config.trials))
    fail("timing: {} trials recorded, the config asks for {}", trials.size(), config.trials);
  TimingResult result;
  result.method = method;
  result.config = config;
  for (std::size_t t = 0; t < trials.size(); ++t) {
    const auto& trial = trials[t];
    if (trial.size() != static_cast<std::size_t>(config.iterations))
      fail("timing: trial {} has {} samples, the config asks for {}", t, trial.size(),
           config.iterations);
    std::vector<double> seconds;
    seconds.reserve(trial.size());
    for (const TimingSample& s : trial) {
      seconds.push_back(s.seconds);
      if (s.throttled) ++result.throttled_samples;
    }
    result.trial_medians.push_back(median_of(std::move(seconds)));
  }
  result.latency_seconds = mean_of(result.trial_medians);
  result.trials = std::move(trials);
  return result;
}

Json timing_result_json(const TimingResult& result) {
  Json trials = Json::array();
  for (const auto& trial : result.trials) {
    Json samples = Json::array();
    for (const TimingSample& s : trial) samples.push_back(sample_json(s));
    trials.push_back(std::move(samples));
  }
  return Json{{"method", timing_method_name(result.method)},
              {"config",
               {{"warmup", result.config.warmup},
                {"iterations", result.config.iterations},
                {"trials", result.config.trials}}},
              {"latency_seconds", result.latency_seconds},
              {"trial_medians_seconds", result.trial_medians},
              {"throttled_samples", result.throttled_samples},
              {"trials", std::move(trials)}};
}

TimingResult timing_result_from_json(const JsonCursor& c) {
  c.expect_object();
  const JsonCursor method_field = c.at("method");
  const std::string method_name = method_field.as_string();
  TimingMethod method{};
  try {
    method = parse_timing_method(method_name);
  } catch (const Error& e) {
    method_field.fail_here(e.what());
  }
  const JsonCursor config_field = c.at("config");
  config_field.expect_object();
  const TimingConfig config{int_field(config_field.at("warmup")),
                            int_field(config_field.at("iterations")),
                            int_field(config_field.at("trials"))};
  const JsonCursor trials_field = c.at("trials");
  trials_field.expect_array();
  std::vector<std::vector<TimingSample>> trials;
  for (std::size_t t = 0; t < trials_field.size(); ++t) {
    const JsonCursor trial = trials_field.at(t);
    trial.expect_array();
    std::vector<TimingSample>& samples = trials.emplace_back();
    for (std::size_t i = 0; i < trial.size(); ++i) samples.push_back(sample_from_json(trial.at(i)));
  }
  try {
    return summarize_timing(method, config, std::move(trials));
  } catch (const Error& e) {
    c.fail_here(e.what());
  }
}

}  // namespace kh
