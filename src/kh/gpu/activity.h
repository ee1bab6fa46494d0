// GPU activity records as the CUPTI Activity API delivers them, and the official rule that turns
// them into the latency of one timed call (FlashInfer's bench_gpu_time_with_cupti,
// fib_eval_spec.md §4.2 step 5). Nothing here touches CUPTI: the GPU timer copies its records into
// these structs, so the rule is tested on the host with recorded fixtures. Failures come back as
// messages, not exceptions: they become RUNTIME_ERROR verdicts of the candidate, not kh errors.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kh {

/// A runtime or driver API call on the host (cudaLaunchKernel, cuLaunchKernel, cudaMemsetAsync,
/// ...). Timestamps are CUPTI's nanoseconds, the clock of cuptiGetTimestamp.
struct ApiRecord {
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
};

/// Work that ran on the GPU, tied to the API call that issued it by the correlation id.
struct GpuActivity {
  enum class Kind { kKernel, kMemcpy, kMemset };
  Kind kind = Kind::kKernel;
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::string name;             // kernel name; not used for memcpy and memset
  std::uint32_t copy_kind = 0;  // CUpti_ActivityMemcpyKind; memcpy only
  std::uint64_t bytes = 0;      // memcpy and memset only
  std::uint32_t value = 0;      // memset only
};

/// The host timestamps taken just before and just after one call (same clock as the records).
struct HostWindow {
  std::uint64_t t0_ns = 0, t1_ns = 0;
};

/// What identifies an activity across iterations: the official string
/// "{name}_{copy_kind}_{bytes}_{value}_{kind}", where a kernel's name is its own and its other
/// fields are 0, a memcpy is "MEMCPY" with copy kind and bytes, a memset "MEMSET" with bytes and
/// value. Timestamps, stream and correlation id are not part of it.
struct ActivityKey {
  GpuActivity::Kind kind = GpuActivity::Kind::kKernel;
  std::string name;  // "MEMCPY" / "MEMSET" for copies and fills, as the official string has it
  std::uint32_t copy_kind = 0;
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;

  auto operator<=>(const ActivityKey&) const = default;
};

ActivityKey activity_key(const GpuActivity& a);
/// "kernel gemm_f32", "MEMCPY copy kind 1, 4096 bytes", "MEMSET 4096 bytes, value 0".
std::string describe(const ActivityKey& key);

/// The activities of one call: each distinct key with the number of times it occurred.
using ActivitySignature = std::map<ActivityKey, int>;

enum class SignatureRule {
  /// The official check: the SETS of keys must be equal (it builds a Python set), so a kernel
  /// launched twice in one iteration and three times in another passes.
  kOfficialSet,
  /// Stricter: the number of occurrences of every key must be equal too.
  kExactCounts,
};

/// The message prefixes of the two failures, worded as the official ValueErrors.
inline constexpr std::string_view kNoActivityMessage = "no GPU activity recorded in the call";
inline constexpr std::string_view kInconsistentMessage = "Inconsistent kernel names";

/// One call's GPU activity: the earliest start and latest end over every activity correlated with
/// an API call that started inside the call's host window, on any stream.
struct IterationSpan {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::size_t activity_count = 0;
  ActivitySignature signature;

  /// end - start in seconds. Host time before the first activity is not in it; idle gaps between
  /// activities (launch overhead, host synchronisation) are.
  double seconds() const;
};

struct IterationSpanResult {
  IterationSpan span;  // meaningful when ok()
  std::string error;   // kNoActivityMessage when no activity is correlated with the window
  bool ok() const { return error.empty(); }
};

/// The official span of one call. An API record counts when its START lies in [t0, t1] (both
/// ends included); one that started before t0 (the L2 flush, issued and synchronised before the
/// call) does not, even if its work overlaps the window.
IterationSpanResult iteration_span(std::span<const ApiRecord> api,
                                   std::span<const GpuActivity> activities, HostWindow window);

/// The activities of one call (correlated with an API call started in the window), in start
/// order: the call's timeline.
std::vector<GpuActivity> window_activities(std::span<const ApiRecord> api,
                                           std::span<const GpuActivity> activities,
                                           HostWindow window);

/// What differs between `first` and `next` under `rule` ("missing kernel a; extra kernel b"), or
/// nullopt when they match.
std::optional<std::string> signature_difference(const ActivitySignature& first,
                                                const ActivitySignature& next, SignatureRule rule);

/// nullopt when every signature matches the first under `rule`; else "Inconsistent kernel names:
/// timed iteration N differs from iteration 0: ..." for the first one that does not.
std::optional<std::string> check_signatures(std::span<const ActivitySignature> per_iteration,
                                            SignatureRule rule);

struct TimedSpansResult {
  std::vector<double> seconds;  // one per window, in order; meaningful when ok()
  ActivitySignature signature;  // of the first iteration
  std::string error;
  bool ok() const { return error.empty(); }
};

/// The whole official processing of one trial's timed calls, in its order: for each window, no
/// activity is an error, then a signature unlike the first window's is an error; the first error
/// in window order is the one reported (iterations counted from 0, as the official message does).
TimedSpansResult timed_iteration_spans(std::span<const ApiRecord> api,
                                       std::span<const GpuActivity> activities,
                                       std::span<const HostWindow> windows,
                                       SignatureRule rule = SignatureRule::kOfficialSet);

}  // namespace kh
