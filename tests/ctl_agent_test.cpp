// `kh agent` end to end through the real binary, on the cpu backend, with scripted agents: one
// that hands back a candidate (it is taken by content hash, gated and promoted), one that crashes,
// one that hangs past its timeout, one that writes the store (restored, its candidate not taken);
// each failure is recorded as a failed round and the loop goes on; the budget stops the loop.
#include <fstream>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "kh/ctl/round_manifest.h"
#include "kh/spec/dataset.h"
#include "kh/spec/workload.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class AgentCli : public ::testing::Test {
 protected:
  fs::path workloads() const {
    const fs::path path = dir_.path() / "decode.jsonl";
    if (!fs::exists(path)) {
      const Dataset ds = Dataset::open(test::source_dir());
      save_workload_file(path, {{kDecode, ds.workloads(kDecode).at(0)}});
    }
    return path;
  }
  fs::path store() const { return dir_.path() / "store"; }
  fs::path rounds() const { return dir_.path() / "rounds"; }
  test::CommandResult agent(const std::vector<std::string>& commands,
                            const std::string& extra) const {
    std::string cmds;
    for (const auto& c : commands) cmds += " --cmd " + quote(c);
    return test::run_command(fmt::format(
        "env KH_MEMORY_DIR= {} agent {} {} --seed {} --rounds-dir {} --store {} --root {} "
        "--promote '--backend cpu --timing wall --trials 1 --replay-trials 2 "
        "--adversarial-trials 1 --workloads {} --root {} --cache {} --logs {}' --json {}",
        KH_BINARY, kDecode, cmds, (test::source_dir() / "tests/candidates/gdn_decode_cpp").string(),
        rounds().string(), store().string(), test::source_dir().string(), workloads().string(),
        test::source_dir().string(), (test::source_dir() / "build" / "test-build-cache").string(),
        (dir_.path() / "logs").string(), extra));
  }
  std::vector<RoundManifest> all_rounds() const { return load_rounds(rounds(), kDecode); }
  test::ScopedTempDir dir_;
};

TEST_F(AgentCli, TakesWhatAnAgentHandsBackAndRecordsEveryFailure) {
  const std::string writer = "cp -r \"$KH_SEED\" \"$KH_OUT/candidate\" && echo handed back";
  const auto r = agent({writer}, "--rounds 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rounds = all_rounds();
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].decision, RoundRecord::Decision::kPromote) << r.err;
  ASSERT_EQ(rounds[0].agent_runs.size(), 1u);
  const std::string taken = rounds[0].agent_runs[0]["candidates"][0];
  EXPECT_THAT(taken, HasSubstr("/001/candidates/"));  // a copy by content hash, not the agent's
  EXPECT_TRUE(fs::exists(fs::path(taken) / "candidate.toml"));

  // A crash, a hang and a store writer: three failed rounds, the loop carries on through them.
  const std::string db = (store() / "store.db").string();
  const auto bad = agent({"echo boom; exit 3"}, "--rounds 1");
  ASSERT_EQ(bad.status, 0) << bad.err;
  const auto hang = agent({"sleep 30"}, "--rounds 1 --agent-timeout 0.5");
  ASSERT_EQ(hang.status, 0) << hang.err;
  const auto vandal = agent({"echo junk >> " + quote(db) + "; " + writer}, "--rounds 1");
  ASSERT_EQ(vandal.status, 0) << vandal.err;
  rounds = all_rounds();
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_EQ(rounds[1].decision, RoundRecord::Decision::kFailed);
  EXPECT_THAT(rounds[1].note, HasSubstr("the agent failed (exit 3)"));
  EXPECT_EQ(rounds[2].decision, RoundRecord::Decision::kFailed);
  EXPECT_THAT(rounds[2].note, HasSubstr("timed out"));
  EXPECT_TRUE(rounds[2].agent_runs[0]["timed_out"].get<bool>());
  EXPECT_EQ(rounds[3].decision, RoundRecord::Decision::kFailed);
  EXPECT_THAT(rounds[3].note, HasSubstr("changed the store"));
  EXPECT_TRUE(rounds[3].submissions.empty()) << "a store writer's candidate must not be gated";
  // The store was put back: the promotion of round 1 is still the retained candidate.
  const auto retained = test::run_command(fmt::format(
      "env KH_MEMORY_DIR= {} retained {} --json --store {}", KH_BINARY, kDecode, store().string()));
  ASSERT_EQ(retained.status, 0) << retained.err;
  EXPECT_THAT(retained.out, HasSubstr("\"decision\": \"promote\""));
}

TEST_F(AgentCli, TheBudgetStopsTheLoop) {
  const std::string writer = "cp -r \"$KH_SEED\" \"$KH_OUT/candidate\"";
  // A budget of 6 ms of gating is spent by the first submission: one round of the three.
  const auto r = agent({writer}, "--rounds 3 --budget 0.0001");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("budget"));
  EXPECT_EQ(all_rounds().size(), 1u);
}

}  // namespace
}  // namespace kh::ctl
