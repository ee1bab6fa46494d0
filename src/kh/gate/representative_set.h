// Representative selection (the seed system's rule, seed_harness_features.md §2): from a
// definition's regimes and the retained candidate's per-workload latencies, groups prioritised by
// latency share, and a small set of workloads covering every group, for the cheap first gate.
//
// Groups: the regimes of spec/regimes.h; then any workload carrying at least
// kOutlierLatencyShare of the total latency is taken out of its regime into a group of its own;
// when fewer than kMinimumGroups groups result and a group has at least two workloads, the group
// with the largest latency share is split at its median latency (lower half / upper half) until
// there are kMinimumGroups or no group can be split. Representatives: per group, the workload
// whose latency is nearest the group's median latency (ties: the earlier workload), plus the
// group's heaviest workload when it carries at least kHeavyWorkloadShare of the total.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kh/gate/paired_statistics.h"
#include "kh/spec/regimes.h"

namespace kh {

inline constexpr double kOutlierLatencyShare = 1.0 / 3.0;
inline constexpr int kMinimumGroups = 3;
inline constexpr double kHeavyWorkloadShare = 0.10;

struct RepresentativeGroup {
  WorkloadGroup group;                       // name and member uuids (dataset order)
  double latency_share = 0;                  // of the retained candidate's total
  std::vector<std::string> representatives;  // uuids chosen from it
};

struct RepresentativeSet {
  std::vector<RepresentativeGroup> groups;  // by latency share, largest first
  std::vector<std::string> workloads;       // every representative, without repeats
};

/// `workloads` in dataset order; `latency` has the retained candidate's latency per uuid (a
/// workload without one counts as 0 latency and is only chosen when its group has no other).
RepresentativeSet select_representatives(const RegimePartition& partition,
                                         const std::vector<Workload>& workloads,
                                         const std::map<std::string, double>& latency);

}  // namespace kh
