// A profile turned into the controller's state: which kernel dominates the call, what limits it
// (one bottleneck class, by the ordered rules of bottleneck_state.cpp and the thresholds of
// thresholds.h), and how far the call is from its roofline floor.
#pragma once

#include <optional>
#include <string>

#include "kh/ctl/kernel_profile.h"

namespace kh::ctl {

enum class Bottleneck {
  kLaunchBound,            // the span is mostly launch overhead or gaps between kernels
  kSpilling,               // local-memory traffic from register spills
  kUnderfilledGrid,        // fewer waves than SMs can run
  kMemoryBound,            // the memory system leads and is near its peak
  kComputeBound,           // the SM pipes lead and are near their peak
  kOccupancyRegisters,     // low theoretical occupancy, registers the limit
  kOccupancySharedMemory,  // low theoretical occupancy, shared memory the limit
  kUncoalesced,            // global loads touch many more sectors than they use
  kLatencyBound,           // neither unit busy: dependent memory accesses, barriers
  kBalanced,               // both units busy, neither leads
  kUnknown,                // the profile lacks the metrics to say
};

/// The snake_case name used in knowledge bases, the store and JSON ("memory_bound").
std::string bottleneck_name(Bottleneck b);
/// The inverse; fails naming `where` on an unknown name.
Bottleneck bottleneck_from_name(const std::string& name, const std::string& where);

struct BottleneckState {
  std::string dominant_kernel;  // its name up to the argument list
  double dominant_share = 0;    // of the sum of the call's kernel durations
  int kernels = 0;
  Bottleneck bottleneck = Bottleneck::kUnknown;
  std::string evidence;            // the numbers the class rests on, for people
  std::optional<double> headroom;  // span / roofline floor (1 = at the floor)
  /// What rounds compare: the class and the dominant kernel ("memory_bound@split_kv_attention").
  std::string signature() const;
};

/// Classifies `call`. `floor_seconds` (the roofline floor of its workload) gives the headroom;
/// `empty_kernel_seconds` (kh ceilings) enables the launch-bound rule.
BottleneckState classify(const CallProfile& call, std::optional<double> floor_seconds,
                         std::optional<double> empty_kernel_seconds);

}  // namespace kh::ctl
