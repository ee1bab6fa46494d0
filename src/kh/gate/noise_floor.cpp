// The noise floor from an A/A gate. Half-widths are taken as the larger side of the interval
// because bootstrap percentile intervals of a ratio are not symmetric, and the floor must not be
// understated on the side a gate would call.
#include "kh/gate/noise_floor.h"

#include <algorithm>
#include <vector>

namespace kh {
namespace {

double relative_half_width(const Interval& i) {
  return std::max(i.estimate - i.lo, i.hi - i.estimate) / i.estimate;
}

}  // namespace

double NoiseFloor::minimum_effect() const {
  return std::max(kMinimumEffectFloor, kMinimumEffectPerNoise * distribution_spread);
}

NoiseFloor noise_floor_from(const PairedGateResult& aa) {
  NoiseFloor floor;
  std::vector<double> spreads;
  spreads.reserve(aa.workloads.size());
  for (const WorkloadGate& w : aa.workloads) {
    const double spread = relative_half_width(w.speedup);
    floor.workload_spread[w.workload] = spread;
    spreads.push_back(spread);
  }
  if (!spreads.empty()) {
    std::sort(spreads.begin(), spreads.end());
    const std::size_t n = spreads.size();
    floor.median_workload_spread = 0.5 * (spreads[(n - 1) / 2] + spreads[n / 2]);
    floor.max_workload_spread = spreads.back();
  }
  floor.distribution_spread = relative_half_width(aa.overall.objective);
  return floor;
}

}  // namespace kh
