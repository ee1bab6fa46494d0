#include "kh/ctl/bottleneck_state.h"

#include <algorithm>
#include <utility>

#include "kh/core/error.h"
#include "kh/ctl/thresholds.h"

namespace kh::ctl {
namespace {

constexpr std::pair<Bottleneck, const char*> kNames[] = {
    {Bottleneck::kLaunchBound, "launch_bound"},
    {Bottleneck::kSpilling, "spilling"},
    {Bottleneck::kUnderfilledGrid, "underfilled_grid"},
    {Bottleneck::kMemoryBound, "memory_bound"},
    {Bottleneck::kComputeBound, "compute_bound"},
    {Bottleneck::kOccupancyRegisters, "occupancy_registers"},
    {Bottleneck::kOccupancySharedMemory, "occupancy_shared_memory"},
    {Bottleneck::kUncoalesced, "uncoalesced"},
    {Bottleneck::kLatencyBound, "latency_bound"},
    {Bottleneck::kBalanced, "balanced"},
    {Bottleneck::kUnknown, "unknown"},
};

std::string short_name(const std::string& kernel) {
  return kernel.substr(0, kernel.find('('));
}

// The ordered rules on the dominant kernel. First match wins: a defect (spills, an underfilled
// grid) explains throughput numbers, so it comes before the throughput classes.
std::pair<Bottleneck, std::string> classify_kernel(const KernelProfile& k) {
  if (k.local_memory_bytes && k.grid_threads > 0 &&
      *k.local_memory_bytes / k.grid_threads > kSpillBytesPerThread)
    return {Bottleneck::kSpilling, fmt::format("{:.1f} bytes of local-memory traffic per thread",
                                               *k.local_memory_bytes / k.grid_threads)};
  if (k.waves_per_sm && *k.waves_per_sm < kUnderfilledWaves)
    return {Bottleneck::kUnderfilledGrid, fmt::format("{:.2f} waves per SM", *k.waves_per_sm)};
  if (k.sm_throughput_pct && k.memory_throughput_pct) {
    const double sm = *k.sm_throughput_pct, mem = *k.memory_throughput_pct;
    const std::string both = fmt::format("memory {:.0f}% of peak, SM {:.0f}%", mem, sm);
    if (mem >= kBoundThroughputPct && mem >= sm + kBoundLeadPct)
      return {Bottleneck::kMemoryBound, both};
    if (sm >= kBoundThroughputPct && sm >= mem + kBoundLeadPct)
      return {Bottleneck::kComputeBound, both};
    if (sm >= kBoundThroughputPct && mem >= kBoundThroughputPct)
      return {Bottleneck::kBalanced, both};
  }
  if (k.theoretical_occupancy_pct && *k.theoretical_occupancy_pct < kLowOccupancyPct &&
      k.occupancy_limiter) {
    const std::string why = fmt::format("theoretical occupancy {:.0f}%, limited by {}",
                                        *k.theoretical_occupancy_pct, *k.occupancy_limiter);
    if (*k.occupancy_limiter == "registers") return {Bottleneck::kOccupancyRegisters, why};
    if (*k.occupancy_limiter == "shared_memory") return {Bottleneck::kOccupancySharedMemory, why};
  }
  if (k.sectors_per_request && *k.sectors_per_request > kUncoalescedSectorsPerRequest)
    return {Bottleneck::kUncoalesced,
            fmt::format("{:.1f} sectors per global load request", *k.sectors_per_request)};
  if (k.sm_throughput_pct && k.memory_throughput_pct &&
      *k.sm_throughput_pct < kLatencyBoundThroughputPct &&
      *k.memory_throughput_pct < kLatencyBoundThroughputPct)
    return {Bottleneck::kLatencyBound,
            fmt::format("memory {:.0f}% of peak, SM {:.0f}%: neither is busy",
                        *k.memory_throughput_pct, *k.sm_throughput_pct)};
  if (k.sm_throughput_pct && k.memory_throughput_pct)
    return {Bottleneck::kBalanced, fmt::format("memory {:.0f}% of peak, SM {:.0f}%",
                                               *k.memory_throughput_pct, *k.sm_throughput_pct)};
  return {Bottleneck::kUnknown, "the profile has no throughput metrics for this kernel"};
}

}  // namespace

std::string bottleneck_name(Bottleneck b) {
  for (const auto& [value, name] : kNames)
    if (value == b) return name;
  return "unknown";
}

Bottleneck bottleneck_from_name(const std::string& name, const std::string& where) {
  for (const auto& [value, n] : kNames)
    if (name == n) return value;
  fail(
      "{}: unknown bottleneck class \"{}\" (expected one of launch_bound, spilling, "
      "underfilled_grid, memory_bound, compute_bound, occupancy_registers, "
      "occupancy_shared_memory, uncoalesced, latency_bound, balanced, unknown)",
      where, name);
}

std::string BottleneckState::signature() const {
  return bottleneck_name(bottleneck) + "@" + dominant_kernel;
}

BottleneckState classify(const CallProfile& call, std::optional<double> floor_seconds,
                         std::optional<double> empty_kernel_seconds) {
  if (call.kernels.empty()) fail("classify: the profile holds no kernel launch");
  BottleneckState s;
  s.kernels = static_cast<int>(call.kernels.size());
  const auto dominant = std::max_element(
      call.kernels.begin(), call.kernels.end(),
      [](const auto& a, const auto& b) { return a.duration_seconds < b.duration_seconds; });
  s.dominant_kernel = short_name(dominant->name);
  const double sum = call.sum_of_kernels();
  s.dominant_share = sum > 0 ? dominant->duration_seconds / sum : 1.0;
  const double span = call.span();
  if (floor_seconds && *floor_seconds > 0) s.headroom = span / *floor_seconds;

  const double gaps = call.span_seconds ? std::max(0.0, *call.span_seconds - sum) : 0.0;
  if (empty_kernel_seconds && span <= kLaunchBoundSpanFactor * *empty_kernel_seconds) {
    s.bottleneck = Bottleneck::kLaunchBound;
    s.evidence = fmt::format("span {:.2f} us, within {:.0f}x the empty kernel's {:.2f} us",
                             span * 1e6, kLaunchBoundSpanFactor, *empty_kernel_seconds * 1e6);
    return s;
  }
  if (span > 0 && gaps / span >= kLaunchGapShare) {
    s.bottleneck = Bottleneck::kLaunchBound;
    s.evidence = fmt::format("{:.0f}% of the {:.2f} us span is between kernels", 100 * gaps / span,
                             span * 1e6);
    return s;
  }
  auto [bottleneck, evidence] = classify_kernel(*dominant);
  s.bottleneck = bottleneck;
  s.evidence = std::move(evidence);
  return s;
}

}  // namespace kh::ctl
