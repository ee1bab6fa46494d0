// How many calls a timed measurement makes, and which timer takes it. The official contest's
// counts live in one table (timing_config.cpp) so that kh times with the numbers the contest used.
#pragma once

#include <optional>
#include <string_view>

namespace kh {

struct TimingConfig {
  int warmup;      // untimed calls before the timed ones, each after an L2 flush
  int iterations;  // timed calls per trial; the trial's latency is their median
  int trials;      // input sets; the reported latency is the mean of the trial medians

  bool operator==(const TimingConfig&) const = default;
};

/// FlashInfer-Bench defaults (ResolvedEvalConfig, fib_eval_spec.md §0).
inline constexpr TimingConfig kDefaultTimingConfig{10, 50, 3};

/// The counts the official contest run used for this definition (its per-track CLI flags);
/// definitions the table does not name get kDefaultTimingConfig.
TimingConfig official_timing_config(std::string_view definition_name);

/// Throws kh::Error unless warmup >= 0, iterations >= 1 and trials >= 1 (a median and a mean
/// need at least one value).
void check_timing_config(const TimingConfig& config);

/// The three GPU timers of DESIGN.md "Timing", and the cpu backend's wall clock; every latency kh
/// reports names the one that made it.
enum class TimingMethod {
  kCupti,   // official-aligned: span of the call's GPU activity, from CUPTI records
  kEvents,  // CUDA events around the call (includes host launch gaps)
  kGraph,   // CUDA-graph replay (launch overhead amortised; not comparable with official)
  // The cpu backend's timer: the host's steady clock around each synchronous call (candidates
  // there run on the host and return when done). It exists so that the timing and paired-gate
  // flows run end to end without a GPU (CI); its numbers are host times, not comparable with
  // the GPU methods' and not a performance result.
  kWall,
};

std::string_view timing_method_name(TimingMethod m);  // "cupti", "events", "graph", "wall"
std::optional<TimingMethod> timing_method_from_name(std::string_view name);
/// As timing_method_from_name, but throws kh::Error naming the bad value and the allowed ones.
TimingMethod parse_timing_method(std::string_view name);

/// The backend a method times on: "cpu" for kWall, "cuda" for the GPU methods.
std::string_view timing_method_backend(TimingMethod m);
/// Throws kh::Error unless `method` times on `backend`, naming both and the methods the backend
/// has: "--timing cupti needs the cuda backend; the cpu backend times with --timing wall".
void check_timing_backend(TimingMethod method, std::string_view backend);

}  // namespace kh
