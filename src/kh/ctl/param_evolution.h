// The built-in tuner's evolutionary search, for [params] spaces too large to sweep whole: new
// configurations bred from the best measured ones (crossover of two parents, then mutation), never
// one already measured, and a running estimate that keeps configurations of different sweeps
// comparable by chaining each sweep to the incumbent it re-measures.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kh/ctl/param_search.h"

namespace kh::ctl {

/// Up to `count` configurations of `space` whose param_suffix is not in `seen`, bred from
/// `parents` (best first; at least one): each child takes every param from one of two parents
/// drawn with a bias to the front (uniform crossover), then changes each param to another of its
/// values with probability 1/params (always at least one when the child would repeat a parent).
/// When breeding keeps landing on measured configurations, a random unmeasured one is taken
/// instead. Fewer than `count` only when the space has fewer unmeasured configurations. Each
/// child's suffix is added to `seen`.
std::vector<ParamValues> breed(const ParamChoices& space, const std::vector<ParamValues>& parents,
                               int count, std::set<std::string>& seen, std::mt19937_64& rng);

/// One measured configuration of an evolutionary search.
struct Scored {
  ParamValues params;
  int generation = 0;
  std::optional<double> estimate_seconds;  // chained mean latency; none: failed or untimed
};

/// Folds one generation's ranked sweep into `population`. `ranked` comes from rank_configs over
/// [incumbent, children...] (the incumbent first in the input); the incumbent's estimate scales
/// the sweep (each config's estimate = its mean / the incumbent's mean in this sweep x the
/// incumbent's estimate; the first generation's incumbent keeps its measured mean). Returns the
/// new incumbent: the fastest complete configuration of the sweep.
ParamValues fold_generation(std::vector<Scored>& population, const ParamValues& incumbent,
                            const std::vector<RankedConfig>& ranked, int generation);

/// The population's configurations with an estimate, fastest first (the breeding parents).
std::vector<ParamValues> best_first(const std::vector<Scored>& population, std::size_t limit);

}  // namespace kh::ctl
