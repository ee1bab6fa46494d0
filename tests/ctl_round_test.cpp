// Rounds as files (ctl/round_manifest.h) and `kh round` end to end through the real binary, on the
// cpu backend: a round starts from a recorded profile's state with the knowledge base's direction,
// writes a brief with the contract, state and plan; it cannot be started twice or closed without a
// decision; a rejected direction is not proposed again in the same state; a round killed in the
// middle of a submission says what to rerun and refuses to close; a submission runs kh promote and
// the round closes with its decision. Manifests are checked field by field, and a folder whose
// first write was killed is not a round.
#include <fstream>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/ctl/round_manifest.h"
#include "kh/spec/dataset.h"
#include "kh/spec/workload.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kAttention = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

RoundManifest sample(int round, RoundStatus status) {
  RoundManifest m;
  m.definition = kAttention;
  m.round = round;
  m.status = status;
  m.created_at = "2026-11-30T08:00:00Z";
  m.signature = "underfilled_grid@split_kv_attention";
  m.direction = "fewer_dependent_memory_levels";
  m.surfaces = {"kernels/dsa_attention/route_split_kv.cuh"};
  if (status == RoundStatus::kClosed) m.decision = RoundRecord::Decision::kReject;
  return m;
}

TEST(RoundManifest, RoundTripsAndNamesTheBadField) {
  RoundManifest m = sample(3, RoundStatus::kClosed);
  m.gain = -0.057;
  m.submissions.push_back({{"cand"}, "kh promote cand --json", Json::array({{{"decision", "reject"}}}),
                           std::nullopt});
  const RoundManifest back = round_manifest_from_json(round_manifest_json(m), "m.json");
  EXPECT_EQ(back.round, 3);
  EXPECT_EQ(back.decision, RoundRecord::Decision::kReject);
  EXPECT_DOUBLE_EQ(*back.gain, -0.057);
  ASSERT_EQ(back.submissions.size(), 1u);
  EXPECT_EQ(back.submissions[0].decisions[0]["decision"], "reject");

  Json bad = round_manifest_json(m);
  bad["status"] = "paused";
  try {
    round_manifest_from_json(bad, "m.json");
    FAIL() << "an unknown status must be refused";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("m.json: status: unknown status \"paused\""));
  }
  bad = round_manifest_json(m);
  bad["status"] = "started";  // open, yet with a decision
  EXPECT_THROW(round_manifest_from_json(bad, "m.json"), Error);
}

TEST(RoundManifest, HistoryIsTheClosedRoundsAndAKilledFirstWriteIsNoRound) {
  test::ScopedTempDir dir;
  save_round(round_dir(dir.path(), kAttention, 1), sample(1, RoundStatus::kClosed));
  save_round(round_dir(dir.path(), kAttention, 2), sample(2, RoundStatus::kSubmitted));
  // Round 3 was killed before its manifest existed: a brief and a temporary file only.
  const fs::path killed = round_dir(dir.path(), kAttention, 3);
  fs::create_directories(killed);
  std::ofstream(killed / "brief.md") << "# Round 3";
  std::ofstream(killed / "manifest.json.tmp") << "{\"version\": 1, \"defin";
  const auto rounds = load_rounds(dir.path(), kAttention);
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[1].status, RoundStatus::kSubmitted);
  const auto history = round_history(rounds);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].direction, "fewer_dependent_memory_levels");
  EXPECT_EQ(history[0].state_signature, "underfilled_grid@split_kv_attention");
}

class RoundCli : public ::testing::Test {
 protected:
  // `kh round VERB --rounds-dir DIR REST...`.
  test::CommandResult kh(const std::string& args) const {
    const std::size_t verb = args.find(' ');
    return test::run_command(fmt::format("env KH_MEMORY_DIR= {} round {} --rounds-dir {} {}",
                                         KH_BINARY, args.substr(0, verb), rounds().string(),
                                         args.substr(verb + 1)));
  }
  fs::path rounds() const { return dir_.path() / "rounds"; }
  std::string store() const { return (dir_.path() / "store").string(); }
  // kh state --json of a real one-token DSA attention call (Nsight Compute, one H200).
  fs::path state() const {
    const fs::path path = dir_.path() / "state.json";
    if (!fs::exists(path)) {
      const auto r = test::run_command(fmt::format(
          "{} state {} --launch 0 --floor-us 0.017 --json", KH_BINARY,
          (test::source_dir() / "tests/data/ncu/h200_dsa_attention_full_metrics.csv").string()));
      EXPECT_EQ(r.status, 0) << r.err;
      std::ofstream(path) << r.out;
    }
    return path;
  }
  std::string start(const std::string& def, const std::string& extra = "") const {
    return fmt::format("start {} --root {} --store {} {}", def, test::source_dir().string(),
                       store(), extra);
  }
  test::ScopedTempDir dir_;
};

TEST_F(RoundCli, StartsWithADirectionAndNeverRepeatsARejectedOne) {
  const auto first = kh(start(kAttention, "--state " + state().string()));
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("round 1 of " + kAttention + " started"));
  EXPECT_THAT(first.out, HasSubstr("direction: fewer_dependent_memory_levels"));
  const std::string brief = read_text_file(round_dir(rounds(), kAttention, 1) / "brief.md");
  for (const char* section : {"## The contract", "## The retained candidate", "## Profile and state",
                              "## This round's direction", "## How the round is judged"})
    EXPECT_THAT(brief, HasSubstr(section));
  EXPECT_THAT(brief, HasSubstr("**underfilled_grid** in `split_kv_attention`"));
  EXPECT_THAT(brief, HasSubstr("| num_tokens 1-3 | 9 |"));

  const auto again = kh(start(kAttention, "--state " + state().string()));
  EXPECT_NE(again.status, 0);
  EXPECT_THAT(again.err, HasSubstr("round 1 is still started"));
  const auto undecided = kh("close " + kAttention);
  EXPECT_NE(undecided.status, 0);
  EXPECT_THAT(undecided.err, HasSubstr("no candidate was judged in round 1"));
  const auto closed = kh("close " + kAttention + " --decision reject --note 'lost 5.7 %'");
  ASSERT_EQ(closed.status, 0) << closed.err;

  // The same state again: the rejected direction is passed over.
  const auto second = kh(start(kAttention, "--state " + state().string() + " --json"));
  ASSERT_EQ(second.status, 0) << second.err;
  const Json m = parse_json(second.out, "kh round start --json");
  EXPECT_EQ(m["round"], 2);
  EXPECT_NE(m["direction"], "fewer_dependent_memory_levels");
  EXPECT_THAT(read_text_file(round_dir(rounds(), kAttention, 2) / "brief.md"),
              HasSubstr("fewer_dependent_memory_levels: ended in reject in round 1 in this same state"));
}

TEST_F(RoundCli, AnInterruptedSubmissionIsRerunNotLost) {
  ASSERT_EQ(kh(start(kAttention)).status, 0);
  // What a kill during kh promote leaves: the submission recorded, its decisions not.
  RoundManifest m = load_round(round_dir(rounds(), kAttention, 1));
  m.status = RoundStatus::kSubmitting;
  m.submissions.push_back({{"cand"}, "kh promote cand --json", Json::array(), std::nullopt});
  save_round(round_dir(rounds(), kAttention, 1), m);
  const auto resumed = kh("resume " + kAttention);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("rerun it: kh promote cand --json"));
  const auto closing = kh("close " + kAttention + " --decision failed");
  EXPECT_NE(closing.status, 0);
  EXPECT_THAT(closing.err, HasSubstr("submission was interrupted"));
}

TEST_F(RoundCli, SubmitRunsKhPromoteAndCloseTakesItsDecision) {
  ASSERT_EQ(kh(start(kDecode)).status, 0);
  const Dataset ds = Dataset::open(test::source_dir());
  const fs::path workloads = dir_.path() / "decode.jsonl";
  save_workload_file(workloads, {{kDecode, ds.workloads(kDecode).at(0)}});
  const std::string candidate =
      (test::source_dir() / "tests/candidates/gdn_decode_cpp").string() + "@FAULT=none";
  const auto submitted = kh(fmt::format(
      "submit {} {} --store {} --promote '--backend cpu --timing wall --trials 1 --replay-trials 2 "
      "--adversarial-trials 1 --workloads {} --root {} --cache {} --logs {}'",
      kDecode, candidate, store(), workloads.string(), test::source_dir().string(),
      (test::source_dir() / "build" / "test-build-cache").string(),
      (dir_.path() / "logs").string()));
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_THAT(submitted.out, HasSubstr(": promote"));
  const auto closed = kh("close " + kDecode + " --json");
  ASSERT_EQ(closed.status, 0) << closed.err;
  const Json m = parse_json(closed.out, "kh round close --json");
  EXPECT_EQ(m["decision"], "promote");
  EXPECT_EQ(m["status"], "closed");
  EXPECT_EQ(m["submissions"][0]["decisions"][0]["decision"], "promote");
}

}  // namespace
}  // namespace kh::ctl
