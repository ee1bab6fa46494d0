// The cpu backend's timer (TimingMethod::kWall): the host's steady clock around each call.
// Candidates on the cpu backend run on the host and return when done, so the clock read after
// the call returns is the end of its work. There is no L2 flush: the host has no flush the
// official timer defines, so successive calls may find their data in the CPU caches. These are
// host times for exercising the timing and paired-gate flows without a GPU, not performance
// results, and not comparable with the GPU methods.
#pragma once

#include <vector>

#include "kh/core/json_io.h"
#include "kh/gpu/interleaved_timer.h"

namespace kh {

/// {"gpu": "cpu", "backend": "cpu", "host": hostname, "cpu_model": /proc/cpuinfo's model name
/// (absent when unreadable)}: the environment of a timing on the cpu backend. "gpu" is "cpu" so
/// that readers naming a result's hardware by it (trace export) see what it ran on; no ceilings
/// or roofline floor apply to it (is_cpu_environment).
Json host_environment_json();
/// Whether an environment recorded with a timing is the cpu backend's.
bool is_cpu_environment(const Json& environment);

class HostCallTimer final : public InterleavedTimer {
 public:
  HostCallTimer();

  /// InterleavedTimer's contract with kWall only (a GPU method throws kh::Error). Samples have
  /// sm_clock_mhz 0 and throttle_reasons 0: the host reports no clock state.
  std::vector<TrialTiming> time_interleaved(TimingMethod method, int warmup,
                                            const std::vector<Call>& calls,
                                            const std::vector<int>& order) override;
  Json environment_json() const override { return environment_; }

 private:
  Json environment_;
};

}  // namespace kh
