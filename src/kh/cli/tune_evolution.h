// kh tune's evolutionary search (ctl/param_evolution.h) as a loop of generations: each one sweeps
// the incumbent and its bred children interleaved in one sweep, so every comparison that moves the
// incumbent is made on the same GPU at the same time. The store is the initial population: the
// configurations of this candidate's sources measured before seed the first parents, and the best
// of them competes in the first generation.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kh/ctl/param_evolution.h"

namespace kh::cli {

struct EvolutionPlan {
  ctl::ParamChoices space;
  ParamValues defaults;     // the first incumbent
  int generations = 4;
  int population = 8;       // children per generation, and the parents kept
  std::uint64_t seed = 1;
  std::vector<std::pair<ParamValues, double>> stored;  // from the store, fastest first
};

struct GenerationReport {
  int generation = 0;
  std::string sweep;
  int configurations = 0;  // swept in this generation, the incumbent included
  ParamValues incumbent;   // after the generation
  std::optional<double> incumbent_estimate_seconds;
};

struct EvolutionResult {
  std::vector<ctl::Scored> population;
  std::vector<GenerationReport> generations;
  ParamValues winner;  // the last incumbent
  bool found = false;  // the winner passed and was timed on every workload
};

/// Sweeps `configs` (the incumbent first) and ranks them (ctl::rank_configs); sets `sweep`.
using MeasureConfigs =
    std::function<std::vector<ctl::RankedConfig>(const std::vector<ParamValues>&, std::string&)>;

EvolutionResult run_evolution(const EvolutionPlan& plan, const MeasureConfigs& measure,
                              std::ostream* progress);

}  // namespace kh::cli
