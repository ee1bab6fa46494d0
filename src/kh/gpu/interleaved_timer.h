// What the worker times candidate calls with, whatever the backend: CallTimer (the cuda backend's
// cupti, events and graph methods) or HostCallTimer (the cpu backend's wall clock). Both keep one
// contract, that of the official timer's loop: per call, the pre-warmup calls and `warmup` more
// untimed, then the timed calls in the order asked for.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kh/core/json_io.h"
#include "kh/gpu/activity.h"
#include "kh/gpu/sample_stats.h"
#include "kh/gpu/timing_config.h"

namespace kh {

/// The calls the official timer makes before warmup (one plain, five timed with events only to
/// derive counts; fib_eval_spec.md §4.2 step 2). kh makes them untimed.
inline constexpr int kOfficialPreWarmupCalls = 6;

/// The order in which the calls get their untimed calls: the call timed first, then the others in
/// index order, so that the first timed call never follows its own untimed calls while the others
/// do not. On one H200 a call right after a call of the same candidate ran up to 2x faster on a
/// small workload despite the L2 flush (the flush does not empty the SMs' instruction caches),
/// and with every call warmed in index order the second candidate's first sample of each round
/// came out fast in 140 of 800 rounds, the first candidate's in none: a bias in every paired gate.
/// Inside a round the pair order's coin gives each candidate the same chance of following itself.
std::vector<std::size_t> warmup_order(std::size_t calls, const std::vector<int>& order);

struct TrialTiming {
  std::vector<TimingSample> samples;  // one per timed call when error is empty
  std::string error;
  std::vector<GpuActivity> last_call;  // cupti: the last timed call's kernels, copies and fills
  bool ok() const { return error.empty(); }
};

class InterleavedTimer {
 public:
  /// Issues one candidate call and returns the entry point's status (0 = success) and, when
  /// nonzero, its message in `why`.
  using Call = std::function<int(std::string& why)>;

  virtual ~InterleavedTimer() = default;

  /// Times several calls interleaved (one call is the plain case; two are the paired gate's
  /// candidates on the same inputs): `order[i]` is the index of the call timed at iteration i.
  /// Each call first gets kOfficialPreWarmupCalls untimed calls and `warmup` more. Returns one
  /// TrialTiming per call, its samples in the order taken. A call that returns nonzero ends the
  /// timing with "the entry point returned status N: why", reported on every result. A method
  /// this timer does not have, an empty `calls` or an `order` naming no call throws kh::Error.
  virtual std::vector<TrialTiming> time_interleaved(TimingMethod method, int warmup,
                                                    const std::vector<Call>& calls,
                                                    const std::vector<int>& order) = 0;

  /// What the samples are measured on, recorded with every result; "gpu" names the device
  /// ("cpu" on the cpu backend).
  virtual Json environment_json() const = 0;
};

}  // namespace kh
