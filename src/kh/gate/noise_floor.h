// The noise floor of a GPU and timing method: how far two measurements of the same candidate
// (an A/A gate) are apart per workload and over the distribution. It sets the default minimum
// effect of later gates: a change smaller than what the machine does to one candidate is noise.
#pragma once

#include <map>
#include <string>

#include "kh/gate/paired_statistics.h"

namespace kh {

/// The smallest minimum effect a gate uses, whatever the measured floor.
inline constexpr double kMinimumEffectFloor = 0.005;
/// The minimum effect is this multiple of the A/A distribution-level half-width.
inline constexpr double kMinimumEffectPerNoise = 2.0;

struct NoiseFloor {
  std::map<std::string, double> workload_spread;  // uuid -> relative half-width of A/A interval
  double median_workload_spread = 0;
  double max_workload_spread = 0;
  double distribution_spread = 0;  // relative half-width of the overall A/A interval
  /// max(kMinimumEffectFloor, kMinimumEffectPerNoise * distribution_spread).
  double minimum_effect() const;
};

/// The floor from an A/A gate (a candidate judged against itself). The relative half-width of an
/// interval [lo, hi] around estimate e is max(e - lo, hi - e) / e.
NoiseFloor noise_floor_from(const PairedGateResult& aa);

}  // namespace kh
