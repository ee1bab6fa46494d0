// The tuner's grid and ranking: the defaults first, pins and narrowing, clear errors for unknown
// names and values; complete configurations ranked by mean latency, incomplete ones after them.
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/ctl/param_search.h"

namespace kh::ctl {
namespace {

Candidate two_params() {
  Candidate c;
  c.manifest = "c/candidate.toml";
  c.params = {{"TILE", {"64", "32", "128"}}, {"WAVES", {"4", "1"}}};
  return c;
}

TEST(ParamGrid, DefaultsFirstThenDeclarationOrder) {
  const auto grid = param_grid(two_params(), {}, {});
  ASSERT_EQ(grid.size(), 6u);
  EXPECT_EQ(param_suffix(grid[0]), "TILE=64,WAVES=4");
  EXPECT_EQ(param_suffix(grid[1]), "TILE=64,WAVES=1");
  EXPECT_EQ(param_suffix(grid[5]), "TILE=128,WAVES=1");
}

TEST(ParamGrid, PinsAndNarrowing) {
  const auto pinned = param_grid(two_params(), {"WAVES=1"}, {});
  ASSERT_EQ(pinned.size(), 3u);
  for (const auto& v : pinned) EXPECT_EQ(v.at("WAVES"), "1");
  const auto narrow = param_grid(two_params(), {}, {"TILE=128,64"});
  ASSERT_EQ(narrow.size(), 4u);
  EXPECT_EQ(narrow[0].at("TILE"), "64") << "the manifest's order decides which value is first";
  EXPECT_EQ(narrow[2].at("TILE"), "128");
}

TEST(ParamGrid, UnknownNamesAndValuesAreErrorsThatListWhatIsAllowed) {
  try {
    param_grid(two_params(), {"TILES=64"}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no param TILES (its params: TILE, WAVES)"),
              std::string::npos)
        << e.what();
  }
  try {
    param_grid(two_params(), {}, {"TILE=64,48"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(allowed: 64, 32, 128)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(param_grid(two_params(), {"TILE"}, {}), Error);
}

TEST(RankConfigs, CompleteByMeanLatencyThenIncomplete) {
  auto config = [](const char* tile, std::optional<double> a, std::optional<double> b) {
    ConfigResults r;
    r.params = {{"TILE", tile}};
    r.latency = {{"w1", a}, {"w2", b}};
    return r;
  };
  const auto ranked = rank_configs({config("64", 10e-6, 20e-6), config("32", 8e-6, 12e-6),
                                    config("128", 1e-6, std::nullopt), config("16", 9e-6, 30e-6)});
  ASSERT_EQ(ranked.size(), 4u);
  EXPECT_EQ(ranked[0].params.at("TILE"), "32");
  EXPECT_DOUBLE_EQ(*ranked[0].speedup, 15.0 / 10.0);
  EXPECT_EQ(ranked[1].params.at("TILE"), "64");
  EXPECT_EQ(ranked[2].params.at("TILE"), "16");
  EXPECT_EQ(ranked[3].params.at("TILE"), "128") << "fast on one workload, failed on the other";
  EXPECT_FALSE(ranked[3].complete);
  EXPECT_EQ(ranked[3].failed, 1);
}

}  // namespace
}  // namespace kh::ctl
