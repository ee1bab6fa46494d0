// A second, faster mode in a paired gate's timings. On one H200 a GDN prefill call right after a
// call of the same kernel ran up to 2x faster despite the L2 flush (the SMs' instruction caches
// stay warm), so a gate's samples can be a mixture of two modes. The per-round interquartile mean
// resists a few fast samples, and warmup_order keeps either side from getting them more often by
// construction; what is left is to say when the mixture is there, and how it splits by side.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kh/gate/paired_samples.h"

namespace kh {

/// A sample is in the fast mode when it is below this fraction of its side's round median.
inline constexpr double kFastModeRatio = 0.75;
/// Either side with more than this fraction of its samples in the fast mode is worth a warning.
inline constexpr double kFastModeWarnFraction = 0.02;

struct TimingModes {
  std::size_t a_samples = 0, b_samples = 0;
  std::size_t a_fast = 0, b_fast = 0;  // samples in the fast mode
};

/// Counts each side's samples in the fast mode, every round of every workload.
TimingModes fast_modes(const std::vector<WorkloadSamples>& samples);

/// One line for a person when either side's fast fraction exceeds kFastModeWarnFraction, naming
/// both fractions; "" otherwise.
std::string timing_modes_warning(const TimingModes& modes);

}  // namespace kh
