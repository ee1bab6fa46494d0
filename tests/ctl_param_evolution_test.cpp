// The tuner's evolutionary search: bred configurations are never ones already measured, cover a
// small space exactly before running out, change at least one param of their parents, follow the
// seed; a generation's sweep is chained to the incumbent's earlier estimate and its fastest
// complete configuration becomes the incumbent.
#include <set>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/ctl/param_evolution.h"

namespace kh::ctl {
namespace {

ParamChoices space() { return {{"TILE", {"64", "32", "128"}}, {"WAVES", {"4", "1"}}, {"X", {"a", "b"}}}; }

ParamValues config(const std::string& tile, const std::string& waves, const std::string& x) {
  return {{"TILE", tile}, {"WAVES", waves}, {"X", x}};
}

TEST(ParamEvolution, BredConfigurationsAreNewAndCoverTheSpaceExactly) {
  std::mt19937_64 rng(5);
  const ParamValues defaults = config("64", "4", "a");
  std::set<std::string> seen = {param_suffix(defaults)};
  std::set<std::string> bred;
  for (int round = 0; round < 10; ++round)
    for (const auto& c : breed(space(), {defaults}, 3, seen, rng)) {
      EXPECT_TRUE(bred.insert(param_suffix(c)).second) << "bred twice: " << param_suffix(c);
      EXPECT_NE(c, defaults);
    }
  EXPECT_EQ(bred.size(), 11u) << "12 configurations, the defaults measured already";
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_TRUE(breed(space(), {defaults}, 3, seen, rng).empty()) << "nothing left to measure";
}

TEST(ParamEvolution, ChildrenDifferFromTheirParentsAndFollowTheSeed) {
  const std::vector<ParamValues> parents = {config("32", "1", "b"), config("128", "4", "a")};
  auto run = [&](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::set<std::string> seen = {param_suffix(parents[0]), param_suffix(parents[1])};
    return breed(space(), parents, 4, seen, rng);
  };
  const auto a = run(11), b = run(11), c = run(12);
  EXPECT_EQ(a, b) << "same seed, same children";
  ASSERT_EQ(a.size(), 4u);
  for (const auto& child : a) {
    EXPECT_NE(child, parents[0]);
    EXPECT_NE(child, parents[1]);
    for (const auto& [name, values] : space())
      EXPECT_NE(std::find(values.begin(), values.end(), child.at(name)), values.end());
  }
  EXPECT_NE(a, c) << "another seed breeds otherwise (for this space and these seeds)";
}

TEST(ParamEvolution, GenerationsChainToTheIncumbentAndItsWinnerTakesOver) {
  std::vector<Scored> population;
  const ParamValues d = config("64", "4", "a"), x = config("32", "4", "a"), y = config("128", "4", "a");
  auto ranked = [](std::vector<std::pair<ParamValues, std::optional<double>>> means) {
    std::vector<RankedConfig> out;
    for (auto& [p, m] : means) {
      RankedConfig r;
      r.params = p;
      r.complete = m.has_value();
      r.mean_seconds = m;
      out.push_back(r);
    }
    std::stable_sort(out.begin(), out.end(), [](const RankedConfig& a, const RankedConfig& b) {
      if (a.complete != b.complete) return a.complete;
      return a.complete && *a.mean_seconds < *b.mean_seconds;
    });
    return out;
  };
  // Generation 1: the defaults at 10 us, x at 8 us: x takes over with its measured mean.
  ParamValues incumbent = fold_generation(population, d, ranked({{d, 10e-6}, {x, 8e-6}, {y, std::nullopt}}), 1);
  EXPECT_EQ(incumbent, x);
  // Generation 2 ran slower overall (x measured at 16 us): y at 12 us is 0.75 of x, so its
  // estimate is 0.75 x 8 = 6 us, and it takes over.
  incumbent = fold_generation(population, x, ranked({{x, 16e-6}, {y, 12e-6}}), 2);
  EXPECT_EQ(incumbent, y);
  const auto best = best_first(population, 10);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0], y);
  EXPECT_EQ(best[1], x);
  EXPECT_EQ(best[2], d);
  for (const auto& s : population)
    if (s.params == y) {
      EXPECT_NEAR(*s.estimate_seconds, 6e-6, 1e-12);
      EXPECT_EQ(s.generation, 2);
    }
  // A sweep where nothing beats the incumbent keeps it.
  EXPECT_EQ(fold_generation(population, y, ranked({{y, 6e-6}, {d, 9e-6}}), 3), y);
}

TEST(ParamEvolution, BreedingNeedsAParentWithEveryParam) {
  std::mt19937_64 rng(1);
  std::set<std::string> seen;
  EXPECT_THROW(breed(space(), {}, 1, seen, rng), Error);
  EXPECT_THROW(breed(space(), {{{"TILE", "64"}}}, 1, seen, rng), Error);
}

}  // namespace
}  // namespace kh::ctl
