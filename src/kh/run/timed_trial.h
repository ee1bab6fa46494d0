// One timed trial of one workload in the worker: the trial's inputs drawn as for a checked call
// (on the device where possible), the candidate timed with the backend's InterleavedTimer
// (CallTimer on cuda, HostCallTimer on cpu), and the minimal cost of the call (roofline) computed
// from those same inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kh/gen/input_generator.h"
#include "kh/gpu/interleaved_timer.h"
#include "kh/roofline/call_cost.h"
#include "kh/run/candidate_library.h"
#include "kh/run/memory_backend.h"

namespace kh {

struct TimedTrial {
  TrialTiming timing;
  std::optional<CallCost> cost;  // nullopt when the definition has no cost model
  std::string cost_error;
};

TimedTrial run_timed_trial(MemoryBackend& backend, const CandidateLibrary& library,
                           const InputGenerator& generator, std::int64_t trial, TimingMethod method,
                           const TimingConfig& config, InterleavedTimer& timer);

/// The paired gate's round on one workload: several candidates on the same buffers, holding the
/// same inputs, timed interleaved in `order` (InterleavedTimer::time_interleaved), after `warmup`
/// untimed calls each. The workspace is the largest any of them asks for. One timing per library.
struct TimedCalls {
  std::vector<TrialTiming> timings;
  std::optional<CallCost> cost;
  std::string cost_error;
};
TimedCalls run_timed_calls(MemoryBackend& backend,
                           const std::vector<const CandidateLibrary*>& libraries,
                           const InputGenerator& generator, std::int64_t trial, TimingMethod method,
                           int warmup, const std::vector<int>& order, InterleavedTimer& timer);

}  // namespace kh
