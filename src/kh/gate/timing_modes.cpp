#include "kh/gate/timing_modes.h"

#include <algorithm>

#include <fmt/format.h>

#include "kh/gpu/sample_stats.h"

namespace kh {
namespace {

// Adds one side's samples of one round.
void count(const std::vector<double>& side, std::size_t& samples, std::size_t& fast) {
  if (side.empty()) return;
  const double threshold = kFastModeRatio * median_of(side);
  samples += side.size();
  fast += static_cast<std::size_t>(
      std::count_if(side.begin(), side.end(), [&](double s) { return s < threshold; }));
}

double fraction(std::size_t part, std::size_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

TimingModes fast_modes(const std::vector<WorkloadSamples>& samples) {
  TimingModes m;
  for (const WorkloadSamples& w : samples)
    for (const PairedRound& r : w.rounds) {
      count(r.a, m.a_samples, m.a_fast);
      count(r.b, m.b_samples, m.b_fast);
    }
  return m;
}

std::string timing_modes_warning(const TimingModes& m) {
  const double a = fraction(m.a_fast, m.a_samples), b = fraction(m.b_fast, m.b_samples);
  if (a <= kFastModeWarnFraction && b <= kFastModeWarnFraction) return "";
  return fmt::format(
      "a second, faster timing mode: {:.1f} % of A's and {:.1f} % of B's samples are below "
      "{:g}x their round's median (on one H200: a kernel right after itself, its instruction "
      "caches warm); the per-round interquartile mean resists a few, but a large or one-sided "
      "share deserves a look at the samples (bench/gate/first_pair_bias.py)",
      100 * a, 100 * b, kFastModeRatio);
}

}  // namespace kh
