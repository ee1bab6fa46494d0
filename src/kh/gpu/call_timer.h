// Times one trial of calls of a candidate on the cuda backend, with one of the three GPU methods of
// DESIGN.md "Timing". Every timed call is preceded by an L2 flush (a memset of twice the L2 size,
// synchronised) as the official timer does; the SM clock and clock event reasons are read after
// every timed call. Failures the official timer reports as RUNTIME_ERROR (no activity,
// inconsistent activity sets, an entry point error, a graph capture that fails) come back as
// messages; device faults throw DeviceError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kh/core/json_io.h"
#include "kh/gpu/interleaved_timer.h"
#include "kh/gpu/timing_config.h"

namespace kh {

/// What a timing result is measured on: recorded with every result.
struct DeviceEnvironment {
  std::string gpu;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::string pci_bus_id;
  int driver_version = 0;      // CUDA driver API version, e.g. 13000
  std::string driver_release;  // display driver, e.g. "580.159.04" (NVML; empty if unknown)
  int runtime_version = 0;     // CUDA runtime kh was built with and runs
  std::string compiler;        // nvcc that built kh's device code
  double max_sm_clock_mhz = 0;
  bool clocks_available = false;  // NVML readable
};
Json device_environment_json(const DeviceEnvironment& e);

/// The cuda backend's InterleavedTimer (kOfficialPreWarmupCalls are made after flushes too).
class CallTimer final : public InterleavedTimer {
 public:
  /// On CUDA device `device`, for calls issued on `cuda_stream`. Allocates the flush buffer.
  CallTimer(int device, void* cuda_stream);
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  const DeviceEnvironment& environment() const;
  Json environment_json() const override { return device_environment_json(environment()); }

  /// `call` issues one candidate call on the stream (InterleavedTimer::Call); config.iterations
  /// samples when it succeeds.
  TrialTiming time_trial(TimingMethod method, const TimingConfig& config, const Call& call);

  /// InterleavedTimer's contract with the GPU methods (kWall is the cpu backend's: refused);
  /// every timed call follows an L2 flush as in time_trial. Under cupti each call's spans are
  /// checked (activity present, same set) among its own iterations.
  std::vector<TrialTiming> time_interleaved(TimingMethod method, int warmup,
                                            const std::vector<Call>& calls,
                                            const std::vector<int>& order) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kh
