#include "kh/cli/tune_evolution.h"

#include <set>

#include <fmt/format.h>

namespace kh::cli {

EvolutionResult run_evolution(const EvolutionPlan& plan, const MeasureConfigs& measure,
                              std::ostream* progress) {
  EvolutionResult out;
  std::mt19937_64 rng(plan.seed);
  std::set<std::string> seen = {ctl::param_suffix(plan.defaults)};
  ParamValues incumbent = plan.defaults;
  for (int g = 1; g <= plan.generations; ++g) {
    std::vector<ParamValues> parents = ctl::best_first(out.population, plan.population);
    std::vector<ParamValues> children;
    if (g == 1) {
      parents = {plan.defaults};
      for (const auto& [params, mean] : plan.stored) parents.push_back(params);
      // The store's best competes at once, re-measured beside the defaults.
      for (const auto& [params, mean] : plan.stored)
        if (seen.insert(ctl::param_suffix(params)).second) {
          children.push_back(params);
          break;
        }
    }
    for (auto& c : ctl::breed(plan.space, parents,
                              plan.population - static_cast<int>(children.size()), seen, rng))
      children.push_back(std::move(c));
    if (children.empty()) break;  // every configuration of the space was measured
    std::vector<ParamValues> configs = {incumbent};
    configs.insert(configs.end(), children.begin(), children.end());
    GenerationReport report;
    report.generation = g;
    report.configurations = static_cast<int>(configs.size());
    const std::vector<ctl::RankedConfig> ranked = measure(configs, report.sweep);
    incumbent = ctl::fold_generation(out.population, incumbent, ranked, g);
    report.incumbent = incumbent;
    for (const auto& s : out.population)
      if (s.params == incumbent) report.incumbent_estimate_seconds = s.estimate_seconds;
    if (progress)
      *progress << fmt::format("kh tune: generation {}: {} configurations, incumbent {} ({})\n", g,
                               configs.size(), ctl::param_suffix(incumbent),
                               report.incumbent_estimate_seconds
                                   ? fmt::format("{:.3f} us", *report.incumbent_estimate_seconds * 1e6)
                                   : std::string("not timed everywhere"));
    out.generations.push_back(std::move(report));
  }
  out.winner = incumbent;
  for (const auto& s : out.population)
    if (s.params == incumbent) out.found = s.estimate_seconds.has_value();
  return out;
}

}  // namespace kh::cli
