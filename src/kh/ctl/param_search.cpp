#include "kh/ctl/param_search.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "kh/core/error.h"

namespace kh::ctl {
namespace {

const ParamSpec& spec_of(const Candidate& c, const std::string& name, const std::string& option) {
  for (const auto& p : c.params)
    if (p.name == name) return p;
  std::string names;
  for (const auto& p : c.params) names += (names.empty() ? "" : ", ") + p.name;
  fail("{} {}: {} has no param {} (its params: {})", option, name, c.manifest.string(), name,
       names.empty() ? "none" : names);
}

std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) fail("{} {}: expected NAME=value", option, text);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

void require_allowed(const ParamSpec& p, const std::string& value, const std::string& option) {
  if (std::find(p.values.begin(), p.values.end(), value) != p.values.end()) return;
  std::string allowed;
  for (const auto& v : p.values) allowed += (allowed.empty() ? "" : ", ") + v;
  fail("{} {}={}: not an allowed value of {} (allowed: {})", option, p.name, value, p.name,
       allowed);
}

}  // namespace

ParamChoices param_choices(const Candidate& c, const std::vector<std::string>& fixed,
                           const std::vector<std::string>& only) {
  ParamChoices choices;
  for (const auto& p : c.params) choices[p.name] = p.values;
  for (const auto& text : only) {
    auto [name, list] = split_assignment(text, "--values");
    const ParamSpec& p = spec_of(c, name, "--values");
    std::vector<std::string> kept;
    std::size_t start = 0;
    while (start <= list.size()) {
      const auto comma = std::min(list.find(',', start), list.size());
      const std::string value = list.substr(start, comma - start);
      require_allowed(p, value, "--values");
      // In the manifest's order, so the first kept value plays the default.
      kept.push_back(value);
      start = comma + 1;
    }
    std::vector<std::string> ordered;
    for (const auto& v : p.values)
      if (std::find(kept.begin(), kept.end(), v) != kept.end()) ordered.push_back(v);
    choices[name] = ordered;
  }
  for (const auto& text : fixed) {
    auto [name, value] = split_assignment(text, "--param");
    require_allowed(spec_of(c, name, "--param"), value, "--param");
    choices[name] = {value};
  }
  return choices;
}

std::size_t grid_size(const ParamChoices& choices) {
  std::size_t n = 1;
  for (const auto& [name, values] : choices) {
    if (values.empty()) return 0;
    if (n > SIZE_MAX / values.size()) return SIZE_MAX;
    n *= values.size();
  }
  return n;
}

std::vector<ParamValues> param_grid(const Candidate& c, const std::vector<std::string>& fixed,
                                    const std::vector<std::string>& only) {
  ParamChoices choices = param_choices(c, fixed, only);
  std::vector<ParamValues> grid(1);
  for (const auto& p : c.params) {  // declaration order; the last varies fastest
    std::vector<ParamValues> next;
    for (const auto& partial : grid)
      for (const auto& value : choices[p.name]) {
        ParamValues v = partial;
        v[p.name] = value;
        next.push_back(std::move(v));
      }
    grid = std::move(next);
  }
  return grid;
}

std::string param_suffix(const ParamValues& values) {
  std::string out;
  for (const auto& [name, value] : values) out += (out.empty() ? "" : ",") + name + "=" + value;
  return out;
}

std::vector<RankedConfig> rank_configs(const std::vector<ConfigResults>& configs) {
  std::vector<RankedConfig> ranked;
  for (const auto& c : configs) {
    RankedConfig r;
    r.params = c.params;
    double sum = 0;
    for (const auto& [workload, latency] : c.latency) {
      if (latency)
        sum += *latency;
      else
        ++r.failed;
    }
    r.complete = !c.latency.empty() && r.failed == 0;
    if (r.complete) r.mean_seconds = sum / static_cast<double>(c.latency.size());
    ranked.push_back(std::move(r));
  }
  const std::optional<double> reference = ranked.empty() ? std::nullopt : ranked[0].mean_seconds;
  for (auto& r : ranked)
    if (r.mean_seconds && reference) r.speedup = *reference / *r.mean_seconds;
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedConfig& a, const RankedConfig& b) {
    if (a.complete != b.complete) return a.complete;
    return a.complete && *a.mean_seconds < *b.mean_seconds;
  });
  return ranked;
}

}  // namespace kh::ctl
