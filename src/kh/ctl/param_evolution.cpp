#include "kh/ctl/param_evolution.h"

#include <algorithm>

#include "kh/core/error.h"

namespace kh::ctl {
namespace {

// Tries per child before falling back to a random unmeasured configuration.
constexpr int kBreedAttempts = 64;
// Tries at a random unmeasured configuration before deciding the space is (nearly) exhausted.
constexpr int kRandomAttempts = 256;

// An index in [0, n) biased to the front: the better of two uniform draws.
std::size_t front_biased(std::size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, n - 1);
  return std::min(pick(rng), pick(rng));
}

ParamValues random_config(const ParamChoices& space, std::mt19937_64& rng) {
  ParamValues v;
  for (const auto& [name, values] : space) {
    std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
    v[name] = values[pick(rng)];
  }
  return v;
}

// Changes `name` to another of its values (no-op for a single-valued param).
void mutate(ParamValues& v, const std::string& name, const std::vector<std::string>& values,
            std::mt19937_64& rng) {
  std::vector<std::string> others;
  for (const auto& x : values)
    if (x != v[name]) others.push_back(x);
  if (others.empty()) return;
  std::uniform_int_distribution<std::size_t> pick(0, others.size() - 1);
  v[name] = others[pick(rng)];
}

ParamValues child_of(const ParamChoices& space, const ParamValues& a, const ParamValues& b,
                     std::mt19937_64& rng) {
  std::bernoulli_distribution coin(0.5);
  std::vector<std::string> free;
  for (const auto& [name, values] : space)
    if (values.size() > 1) free.push_back(name);
  ParamValues child;
  for (const auto& [name, values] : space) child[name] = coin(rng) ? a.at(name) : b.at(name);
  if (free.empty()) return child;
  std::bernoulli_distribution flip(1.0 / static_cast<double>(free.size()));
  bool changed = false;
  for (const auto& name : free)
    if (flip(rng)) {
      mutate(child, name, space.at(name), rng);
      changed = true;
    }
  if (!changed || child == a || child == b) {
    std::uniform_int_distribution<std::size_t> pick(0, free.size() - 1);
    const std::string& name = free[pick(rng)];
    mutate(child, name, space.at(name), rng);
  }
  return child;
}

}  // namespace

std::vector<ParamValues> breed(const ParamChoices& space, const std::vector<ParamValues>& parents,
                               int count, std::set<std::string>& seen, std::mt19937_64& rng) {
  if (parents.empty()) fail("kh tune: the evolutionary search needs a parent configuration");
  for (const auto& p : parents)
    for (const auto& [name, values] : space)
      if (!p.count(name)) fail("kh tune: parent {} has no value for {}", param_suffix(p), name);
  std::vector<ParamValues> children;
  while (static_cast<int>(children.size()) < count) {
    std::optional<ParamValues> next;
    for (int attempt = 0; attempt < kBreedAttempts && !next; ++attempt) {
      const ParamValues& a = parents[front_biased(parents.size(), rng)];
      const ParamValues& b = parents[front_biased(parents.size(), rng)];
      ParamValues c = child_of(space, a, b, rng);
      if (!seen.count(param_suffix(c))) next = std::move(c);
    }
    for (int attempt = 0; attempt < kRandomAttempts && !next; ++attempt) {
      ParamValues c = random_config(space, rng);
      if (!seen.count(param_suffix(c))) next = std::move(c);
    }
    if (!next) break;  // (nearly) every configuration was measured
    seen.insert(param_suffix(*next));
    children.push_back(std::move(*next));
  }
  return children;
}

ParamValues fold_generation(std::vector<Scored>& population, const ParamValues& incumbent,
                            const std::vector<RankedConfig>& ranked, int generation) {
  auto in_population = [&](const ParamValues& p) {
    return std::find_if(population.begin(), population.end(),
                        [&](const Scored& s) { return s.params == p; });
  };
  std::optional<double> incumbent_mean;
  for (const auto& r : ranked)
    if (r.params == incumbent) incumbent_mean = r.mean_seconds;
  // The scale of this sweep: the incumbent's earlier estimate over its mean here. The first time
  // the incumbent is measured (or when it was never timed before), this sweep's means stand.
  double scale = 1.0;
  auto known = in_population(incumbent);
  if (known == population.end()) {
    population.push_back(Scored{incumbent, generation, incumbent_mean});
  } else if (!known->estimate_seconds) {
    known->estimate_seconds = incumbent_mean;
  } else if (incumbent_mean) {
    scale = *known->estimate_seconds / *incumbent_mean;
  }
  for (const auto& r : ranked) {
    if (r.params == incumbent) continue;
    Scored s{r.params, generation, std::nullopt};
    if (r.complete && r.mean_seconds) s.estimate_seconds = *r.mean_seconds * scale;
    auto it = in_population(r.params);
    if (it == population.end())
      population.push_back(std::move(s));
    else
      *it = std::move(s);
  }
  // ranked: complete ones fastest first; the winner of this sweep becomes the incumbent.
  if (!ranked.empty() && ranked[0].complete) return ranked[0].params;
  return incumbent;
}

std::vector<ParamValues> best_first(const std::vector<Scored>& population, std::size_t limit) {
  std::vector<const Scored*> timed;
  for (const auto& s : population)
    if (s.estimate_seconds) timed.push_back(&s);
  std::stable_sort(timed.begin(), timed.end(), [](const Scored* a, const Scored* b) {
    return *a->estimate_seconds < *b->estimate_seconds;
  });
  std::vector<ParamValues> out;
  for (std::size_t i = 0; i < timed.size() && i < limit; ++i) out.push_back(timed[i]->params);
  return out;
}

}  // namespace kh::ctl
