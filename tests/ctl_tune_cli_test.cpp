// `kh tune` end to end on the cpu backend: every configuration of a planted-fault candidate's
// FAULT param is swept and ranked by wall time; the incorrect one is ranked last and never wins,
// the slow one loses to the correct one, and a winner that is not the first configuration comes
// with the command that gates it; with --gate, the winner is re-measured against the defaults in a
// paired gate.
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TuneCli : public ::testing::Test {
 protected:
  // The planted-fault GDN decode candidate with FAULT limited to slow, none and skip_element, in
  // that order, so the defaults (slow) are not the fastest.
  // `pad_values` adds a param PAD the kernel ignores, so the space has 3 x pad_values
  // configurations of which FAULT alone decides speed and correctness.
  fs::path candidate(int pad_values = 0) {
    const fs::path dir = dir_.path() / fmt::format("cand{}", pad_values);
    if (fs::exists(dir)) return dir;
    fs::create_directories(dir);
    const fs::path source = test::source_dir() / "tests/candidates/gdn_decode_cpp";
    fs::copy_file(source / "kernel.cpp", dir / "kernel.cpp");
    std::string manifest = read_text_file(source / "candidate.toml");
    std::string params = "FAULT = [\"slow\", \"none\", \"skip_element\"]";
    if (pad_values > 0) {
      params += "\nPAD = [";
      for (int i = 0; i < pad_values; ++i) params += fmt::format("{}\"{}\"", i ? ", " : "", i);
      params += "]";
    }
    manifest = std::regex_replace(manifest, std::regex("FAULT = \\[.*\\]"), params);
    std::ofstream(dir / "candidate.toml") << manifest;
    return dir;
  }
  fs::path workloads() {
    const Dataset ds = Dataset::open(test::source_dir());
    const fs::path path = dir_.path() / "workloads.jsonl";
    std::ofstream out(path);
    int n = 0;
    for (const auto& w : ds.workloads("gdn_decode_qk4_v8_d128_k_last"))
      if (n++ < 2)
        out << Json{{"definition", "gdn_decode_qk4_v8_d128_k_last"}, {"workload", w.to_json()}}
                   .dump()
            << "\n";
    return path;
  }
  test::CommandResult tune(const std::string& extra, int pad_values = 0) {
    return test::run_command(fmt::format(
        "{} tune {} --workloads {} --root {} --trials 1 --timing wall --warmup 0 --iterations 3 "
        "--timing-trials 1 --store {} --cache {} --logs {} {}",
        KH_BINARY, candidate(pad_values).string(), workloads().string(), test::source_dir().string(),
        (dir_.path() / "store").string(), (dir_.path() / "cache").string(),
        (dir_.path() / "logs").string(), extra));
  }
  test::ScopedTempDir dir_;
};

TEST_F(TuneCli, RanksEveryConfigurationAndNamesTheWinner) {
  const auto r = tune("--json --no-gate");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["configurations"].size(), 3u);
  EXPECT_EQ(j["winner"]["FAULT"], "none");
  EXPECT_FALSE(j["winner_is_first"].get<bool>());
  EXPECT_EQ(j["configurations"][1]["params"]["FAULT"], "slow");
  EXPECT_GT(j["configurations"][0]["speedup_over_first"].get<double>(), 1.2)
      << "slow computes every head twice";
  EXPECT_EQ(j["configurations"][2]["params"]["FAULT"], "skip_element");
  EXPECT_FALSE(j["configurations"][2]["complete"].get<bool>());
}

TEST_F(TuneCli, TextNamesTheGateCommandAndRefusesLargeGridsAndUntimedRuns) {
  const auto r = tune("--no-gate");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("fastest: FAULT=none; gate it before adopting it"));
  EXPECT_THAT(r.out, HasSubstr("@FAULT=none --backend cpu --timing wall"));
  const auto big = tune("--no-gate --search grid --max-configs 2");
  EXPECT_NE(big.status, 0);
  EXPECT_THAT(big.err, HasSubstr("3 configurations exceed --max-configs 2"));
  EXPECT_THAT(big.err, HasSubstr("--search evolve"));
  const auto untimed =
      test::run_command(fmt::format("{} tune {}", KH_BINARY, candidate().string()));
  EXPECT_NE(untimed.status, 0);
  EXPECT_THAT(untimed.err, HasSubstr("give --timing"));
}

TEST_F(TuneCli, EvolvesLargeSpacesAndNeverMeasuresAConfigurationTwice) {
  // 12 configurations, more than --max-configs: evolution, 2 generations of 6 children each,
  // which must cover the 11 that are not the defaults without repeating one.
  const auto r = tune("--json --no-gate --max-configs 4 --generations 2 --population 6 --search-seed 7", 4);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["search"], "evolve");
  EXPECT_EQ(j["space"], 12);
  ASSERT_EQ(j["generations"].size(), 2u);
  EXPECT_EQ(j["generations"][0]["configurations"], 7) << "the defaults and 6 children";
  std::set<std::string> measured;
  for (const auto& c : j["configurations"]) {
    const std::string key = c["params"].dump();
    EXPECT_TRUE(measured.insert(key).second) << "measured twice: " << key;
  }
  EXPECT_EQ(measured.size(), 12u) << "the whole space, each configuration once";
  EXPECT_EQ(j["winner"]["FAULT"], "none") << "slow is 2x slower, skip_element is incorrect";
  for (const auto& c : j["configurations"])
    if (c["params"]["FAULT"] == "skip_element") {
      EXPECT_FALSE(c["complete"].get<bool>());
    }
  EXPECT_FALSE(j["winner_is_first"].get<bool>());
}

TEST_F(TuneCli, TheStoreSeedsTheNextSearch) {
  const auto first = tune("--json --no-gate --search evolve --generations 1 --population 3 --search-seed 3", 4);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(Json::parse(first.out)["stored_configurations"], 0);
  // The first search's configurations (same sources and manifest) are in the store now: the
  // second starts from them, the best of them re-measured in its first generation.
  const auto second =
      tune("--json --no-gate --search evolve --generations 1 --population 3 --search-seed 4", 4);
  ASSERT_EQ(second.status, 0) << second.err;
  const Json j = Json::parse(second.out);
  EXPECT_GE(j["stored_configurations"].get<int>(), 2);
  const Json best_before = Json::parse(first.out)["configurations"][0]["params"];
  bool remeasured = false;
  for (const auto& c : j["configurations"]) remeasured = remeasured || c["params"] == best_before;
  const Json defaults = {{"FAULT", "slow"}, {"PAD", "0"}};
  EXPECT_TRUE(remeasured || best_before == defaults) << "the store's best joins the first generation";
}

TEST_F(TuneCli, GateReMeasuresAWinnerAgainstTheDefaults) {
  // The planted effect is 2x (slow computes every head twice): a paired gate of a few rounds on
  // the wall clock sees it, on fresh samples.
  const auto r = tune(
      "--json --gate --gate-options '--rounds 3 --pairs 6 --gate-warmup 1 --trials 1 "
      "--min-effect 0.10'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["winner"]["FAULT"], "none");
  ASSERT_TRUE(j["gate"].is_object()) << r.err;
  EXPECT_EQ(j["gate"]["overall"]["verdict"], "win");
  EXPECT_GT(j["gate"]["overall"]["objective"]["lo"].get<double>(), 1.1);
  // Gating is the default: no --gate needed.
  const auto text = tune("--gate-options '--rounds 3 --pairs 6 --gate-warmup 1 --trials 1'");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("gated against the first configuration (fresh samples, paired): win"));
}

}  // namespace
}  // namespace kh
