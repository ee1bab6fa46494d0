// Timing samples with the clock state they were taken under, and the official summary of them
// (fib_eval_spec.md §4.1): the median over a trial's timed calls, the mean over trials of those
// medians. Every sample is kept and serialised, so a latency can be audited and re-summarised.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kh/core/json_io.h"
#include "kh/gpu/timing_config.h"

namespace kh {

/// NVML clock event reasons (named nvmlClocksThrottleReason* before NVML 12.2, then
/// nvmlClocksEventReason*, same bits), as nvmlDeviceGetCurrentClocksEventReasons returns them.
namespace nvml_clock_reason {
inline constexpr std::uint64_t kGpuIdle = 0x1;
inline constexpr std::uint64_t kApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kSwPowerCap = 0x4;
inline constexpr std::uint64_t kHwSlowdown = 0x8;
inline constexpr std::uint64_t kSyncBoost = 0x10;
inline constexpr std::uint64_t kSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kDisplayClockSetting = 0x100;
}  // namespace nvml_clock_reason

/// The reasons that do not make a sample throttled, because none says the clocks dropped below
/// what was asked for while the call ran:
/// - GpuIdle is set whenever nothing runs; a reading taken just after a call routinely sees it.
/// - ApplicationsClocksSetting means the clocks are held at the set application clocks: that is
///   the locked state the official run asks for (`nvidia-smi -ac`), not a slowdown.
/// - DisplayClockSetting is a fixed configuration, not an event of the run.
/// Every other bit (power cap, thermal or hardware slowdown, power brake, sync boost, and bits a
/// later NVML may add) means the GPU ran below its requested clocks: the sample is flagged.
inline constexpr std::uint64_t kNonThrottlingClockReasons =
    nvml_clock_reason::kGpuIdle | nvml_clock_reason::kApplicationsClocksSetting |
    nvml_clock_reason::kDisplayClockSetting;

bool is_throttled(std::uint64_t clock_reasons);
/// "sw_power_cap|hw_slowdown" for reports; "none" for 0; unknown bits as hex ("0x200").
std::string clock_reason_names(std::uint64_t clock_reasons);

struct TimingSample {
  double seconds = 0;
  double sm_clock_mhz = 0;             // SM clock read with the sample; 0 when unavailable
  std::uint64_t throttle_reasons = 0;  // NVML clock event reasons read with the sample
  bool throttled = false;              // is_throttled(throttle_reasons) when it was taken

  bool operator==(const TimingSample&) const = default;
};

TimingSample make_timing_sample(double seconds, double sm_clock_mhz, std::uint64_t clock_reasons);

/// Python's statistics.median: the middle value, or the mean of the two middle values for an
/// even count. Throws kh::Error on no values.
double median_of(std::vector<double> values);
/// sum / count, summed in order, as the official latency_ms. Throws kh::Error on no values.
double mean_of(std::span<const double> values);

struct TimingResult {
  TimingMethod method = TimingMethod::kCupti;
  TimingConfig config = kDefaultTimingConfig;
  std::vector<std::vector<TimingSample>> trials;  // every timed sample, per trial, in order
  double latency_seconds = 0;                     // mean of trial_medians
  std::vector<double> trial_medians;              // median of each trial's seconds
  int throttled_samples = 0;                      // samples with `throttled` set, all trials
};

/// Summarises samples taken with `config`: there must be config.trials trials of
/// config.iterations samples each (else kh::Error: a timer that lost samples is a bug).
TimingResult summarize_timing(TimingMethod method, const TimingConfig& config,
                              std::vector<std::vector<TimingSample>> trials);

/// {"method", "config", "latency_seconds", "trial_medians_seconds", "throttled_samples",
///  "trials": [[{"seconds", "sm_clock_mhz", "throttle_reasons", "throttled"}, ...], ...]}.
Json timing_result_json(const TimingResult& result);
/// Reads what timing_result_json wrote. The samples and their flags are taken as stored; the
/// median, mean and throttled count are recomputed from them.
TimingResult timing_result_from_json(const JsonCursor& c);

}  // namespace kh
