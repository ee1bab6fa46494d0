// The built-in tuner's search over a candidate's [params]: the grid of configurations (the
// defaults first), and the ranking of a sweep's results by the gate's objective, mean latency over
// the workloads, counting only configurations that passed and were timed everywhere.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/build/candidate.h"

namespace kh::ctl {

/// The values each of `c`'s params may take in a search: `fixed` ("NAME=value") pins a param,
/// `only` ("NAME=a,b,...") keeps those of its allowed values, in the manifest's order (the first
/// plays the default). Unknown names and values that are not allowed are errors.
using ParamChoices = std::map<std::string, std::vector<std::string>>;
ParamChoices param_choices(const Candidate& c, const std::vector<std::string>& fixed,
                           const std::vector<std::string>& only);

/// How many configurations `choices` spans (saturating at SIZE_MAX).
std::size_t grid_size(const ParamChoices& choices);

/// Every configuration of `c`'s params under param_choices(c, fixed, only). The all-defaults
/// configuration (each param's first allowed value, unless pinned) comes first; the rest in
/// declaration order, the last param varying fastest.
std::vector<ParamValues> param_grid(const Candidate& c, const std::vector<std::string>& fixed,
                                    const std::vector<std::string>& only);

/// "A=1,B=2" in name order: the suffix of CAND@... that selects the configuration.
std::string param_suffix(const ParamValues& values);

/// One configuration's results: per workload uuid, the latency in seconds when it passed and was
/// timed, nullopt otherwise (failed, or passed untimed).
struct ConfigResults {
  ParamValues params;
  std::map<std::string, std::optional<double>> latency;
};

struct RankedConfig {
  ParamValues params;
  bool complete = false;  // passed and timed on every workload
  std::optional<double> mean_seconds;
  std::optional<double> speedup;  // the first configuration's mean / this one's
  int failed = 0;                 // workloads without a timed pass
};

/// `configs` (the first is the reference, normally the defaults) ranked: complete ones by mean
/// latency, fastest first, then the incomplete ones in grid order.
std::vector<RankedConfig> rank_configs(const std::vector<ConfigResults>& configs);

}  // namespace kh::ctl
