// The promotion discipline end to end on the cpu backend, through the real kh binary, timed with
// the host wall clock: kh noise stores a floor that later gates use; kh promote makes a
// definition's first candidate retained on correctness and replay alone, promotes a candidate
// twice as fast, rejects one twice as slow (a loss) and one that is wrong, and the high-trial
// replay with adversarial inputs catches a top-k tie bug that 3 realistic trials do not; kh
// retained follows. Sizes are small (2 decode workloads, 3 rounds x 4 pairs): the effects planted
// here are 2x, far beyond the wall timer's noise, and the minimum effect is set to 10 %.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";
const std::string kTopK = "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64";
// Small statistics for speed; the planted effects are 2x.
const std::string kGateFlags =
    "--backend cpu --rounds 4 --pairs 8 --gate-warmup 2 --trials 1 --min-effect 0.10";
const std::string kReplayFlags = "--replay-trials 3 --adversarial-trials 1";

class GateFlow : public ::testing::Test {
 protected:
  /// The shipped workloads of `def` at these dataset indices.
  fs::path workloads_file(const std::string& def, const std::vector<std::size_t>& indices) {
    const Dataset ds = Dataset::open(test::source_dir());
    const auto all = ds.workloads(def);
    std::vector<WorkloadRecord> records;
    for (std::size_t i : indices) records.push_back({def, all.at(i)});
    const fs::path path = dir_.path() / fmt::format("{}_{}.jsonl", def, indices.size());
    save_workload_file(path, records);
    return path;
  }
  test::CommandResult kh(const std::string& args) const {
    return test::run_command(fmt::format(
        "env KH_MEMORY_DIR= {} {} --root {} --cache {} --logs {} --store {}", KH_BINARY, args,
        test::source_dir().string(), (test::source_dir() / "build" / "test-build-cache").string(),
        (dir_.path() / "logs").string(), (dir_.path() / "store").string()));
  }
  /// A workloads file with one small top-k workload that the dataset does not have (workloads
  /// travel to the worker): shipped workload 13 (batch 4, 34 pages per row: the 2048-token cut
  /// falls inside a row) with a cache of 140 pages instead of 11923, so a trial takes
  /// milliseconds on the cpu backend.
  fs::path small_topk_workload() {
    const Dataset ds = Dataset::open(test::source_dir());
    Workload w = ds.workloads(kTopK).at(13);
    w.uuid = "00000000-0000-4000-8000-00000000001d";
    for (auto& [axis, value] : w.axes)
      if (axis == "num_pages") value = 140;
    const fs::path path = dir_.path() / "small_topk.jsonl";
    save_workload_file(path, {{kTopK, w}});
    return path;
  }
  test::CommandResult retained(const std::string& def) const {
    return test::run_command(fmt::format("env KH_MEMORY_DIR= {} retained {} --json --store {}",
                                         KH_BINARY, def, (dir_.path() / "store").string()));
  }
  static std::string decode(const std::string& fault) {
    return (test::source_dir() / "tests/candidates/gdn_decode_cpp").string() + "@FAULT=" + fault;
  }
  static Json json_of(const test::CommandResult& r) {
    EXPECT_FALSE(r.out.empty()) << r.err;
    return r.out.empty() ? Json() : parse_json(r.out, "kh output");
  }
  /// kh promote --json's decisions, one per candidate.
  Json promote_all(const std::string& candidates, const std::string& workloads,
                   int expect_status) {
    const auto r = kh(fmt::format("promote {} {} {} {} --json", candidates, workloads, kGateFlags,
                                  kReplayFlags));
    EXPECT_EQ(r.status, expect_status) << r.out << r.err;
    const Json j = json_of(r);
    return j.is_array() ? j : Json::array();
  }
  /// The decision on a single candidate.
  Json promote(const std::string& candidate, const std::string& workloads, int expect_status) {
    const Json all = promote_all(candidate, workloads, expect_status);
    return all.empty() ? Json() : all.at(0);
  }

  test::ScopedTempDir dir_;
};

TEST_F(GateFlow, PromotesFirstAndFasterCandidatesRejectsSlowerAndWrongOnes) {
  const fs::path w = workloads_file(kDecode, {0, 1});
  EXPECT_EQ(retained(kDecode).status, 3);
  // The library's source check: a folder of a definition nothing was promoted for, never judged,
  // awaits its first promotion (4); once judged, only the retained one passes (0, else 3).
  const auto source = [&](const std::string& fault) {
    return test::run_command(fmt::format("env KH_MEMORY_DIR= {} retained {} --source {} --store {}",
                                         KH_BINARY, kDecode, decode(fault),
                                         (dir_.path() / "store").string()));
  };
  const auto pending = source("skip_element");
  EXPECT_EQ(pending.status, 4) << pending.out;
  EXPECT_THAT(pending.out, HasSubstr("awaits its first promotion"));
  // Without a retained candidate a round takes one candidate; bad flags stop before any work.
  const auto two_first = kh(fmt::format("promote {} {} --workloads {} {}", decode("none"),
                                        decode("slow"), w.string(), kGateFlags));
  EXPECT_EQ(two_first.status, 1);
  EXPECT_THAT(two_first.err, HasSubstr("promote one candidate first"));
  const auto bad = kh(fmt::format("promote {} --workloads {} --backend cpu --confidence 2",
                                  decode("none"), w.string()));
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.err, HasSubstr("--confidence 2"));
  // A fix names its defect, is one candidate, and repairs a retained one.
  const auto fix_flags = [&](const std::string& candidates, const std::string& fix) {
    return kh(fmt::format("promote {} --workloads {} {} --fix '{}'", candidates, w.string(),
                          kGateFlags, fix));
  };
  const auto unnamed = fix_flags(decode("none"), " ");
  EXPECT_EQ(unnamed.status, 1);
  EXPECT_THAT(unnamed.err, HasSubstr("say which defect"));
  const auto two_fixes = fix_flags(decode("none") + " " + decode("slow"), "a race");
  EXPECT_EQ(two_fixes.status, 1);
  EXPECT_THAT(two_fixes.err, HasSubstr("--fix takes one candidate"));
  const auto nothing_to_fix = fix_flags(decode("none"), "a race");
  EXPECT_EQ(nothing_to_fix.status, 1);
  EXPECT_THAT(nothing_to_fix.err, HasSubstr("no retained candidate to repair"));

  // The noise floor: A/A of one candidate; no workload is called a win or a loss.
  const auto noise = kh(fmt::format("noise {} --workloads {} {} --json", decode("none"), w.string(),
                                    "--backend cpu --rounds 3 --pairs 4 --trials 1"));
  ASSERT_EQ(noise.status, 0) << noise.err;
  const Json floor = json_of(noise);
  EXPECT_GE(floor.at("minimum_effect").get<double>(), 0.005);
  EXPECT_EQ(floor.at("timing_method"), "wall");
  EXPECT_EQ(floor.at("gpu"), "cpu");
  for (const auto& wg : floor.at("aa").at("workloads")) EXPECT_EQ(wg.at("verdict"), "tie");

  // The first candidate has nothing to beat: correctness and replay decide.
  Json d = promote(decode("slow"), "--workloads " + w.string(), 0);
  EXPECT_EQ(d.at("decision"), "promote") << d.dump(2);
  EXPECT_THAT(d.at("reason").get<std::string>(), HasSubstr("first candidate"));

  // A round of two: the one twice as fast goes through every stage and is promoted (retained
  // from now on); the other (the retained candidate itself, a tie) is not taken further.
  const Json round = promote_all(decode("slow") + " " + decode("none"), "--workloads " + w.string(), 0);
  ASSERT_EQ(round.size(), 2u) << round.dump(2);
  d = round.at(0).at("decision") == "promote" ? round.at(0) : round.at(1);
  const Json other = round.at(0).at("decision") == "promote" ? round.at(1) : round.at(0);
  EXPECT_EQ(d.at("decision"), "promote") << round.dump(2);
  EXPECT_EQ(d.at("replay").at("failures"), 0);
  EXPECT_EQ(other.at("decision"), "reject") << round.dump(2);
  // Not taken further once the faster one is promoted; on a loaded CPU its A/A representative
  // gate (wall timer) may already read a loss and reject it first. Either way it is not promoted.
  EXPECT_THAT(other.at("reason").get<std::string>(),
              ::testing::AnyOf(HasSubstr("was promoted in this round"),
                               HasSubstr("the representative gate is at")));
  const Json r = json_of(retained(kDecode));
  EXPECT_EQ(r.at("retained").at("candidate"), d.at("candidate"));

  // Twice as slow against the retained one: a loss, rejected.
  d = promote(decode("slow"), "--workloads " + w.string(), 3);
  EXPECT_EQ(d.at("decision"), "reject") << d.dump(2);
  EXPECT_THAT(d.dump(), HasSubstr("loss"));

  // A fix must not cost speed: twice as slow is rejected with --fix too, its defect in the reason
  // and the evidence.
  const auto slow_fix = kh(fmt::format("promote {} --workloads {} {} {} --json --fix 'a race'",
                                       decode("slow"), w.string(), kGateFlags, kReplayFlags));
  EXPECT_EQ(slow_fix.status, 3) << slow_fix.out << slow_fix.err;
  d = json_of(slow_fix).at(0);
  EXPECT_EQ(d.at("decision"), "reject") << d.dump(2);
  EXPECT_THAT(d.at("reason").get<std::string>(), HasSubstr("the fix (a race) is not promoted"));
  EXPECT_EQ(d.at("fix"), "a race");

  // Wrong: rejected on correctness, whatever its speed.
  d = promote(decode("skip_element"), "--workloads " + w.string(), 3);
  EXPECT_EQ(d.at("decision"), "reject") << d.dump(2);
  EXPECT_THAT(d.at("reason").get<std::string>(), HasSubstr("correctness"));
  EXPECT_EQ(source("skip_element").status, 3) << "judged now, and another is retained";

  // The promoted folder is the retained candidate, another is not.
  EXPECT_EQ(source("none").status, 0) << source("none").out;
  const auto stale = source("slow");
  EXPECT_EQ(stale.status, 3);
  EXPECT_THAT(stale.out, HasSubstr("not to the retained candidate"));

  // The retained candidate did not change; kh gate against it reports, decides nothing.
  EXPECT_EQ(json_of(retained(kDecode)).at("retained").at("candidate"),
            r.at("retained").at("candidate"));
  const auto gate = kh(fmt::format("gate {} --against retained --workloads {} {} --json",
                                   decode("slow"), w.string(), kGateFlags));
  ASSERT_EQ(gate.status, 0) << gate.err;
  const Json g = json_of(gate);
  EXPECT_EQ(g.at("overall").at("verdict"), "loss");
  EXPECT_LT(g.at("overall").at("objective").at("hi").get<double>(), 0.9);
}

TEST_F(GateFlow, ReplayCatchesATieBugThatThreeTrialsMiss) {
  const fs::path w = small_topk_workload();
  const std::string cand =
      (test::source_dir() / "tests/candidates/dsa_topk_indexer_cpp").string() +
      "@FAULT=duplicate_on_ties";
  // Three realistic trials pass...
  const auto three =
      kh(fmt::format("sweep {} --workloads {} --trials 3 --json", cand, w.string()));
  EXPECT_EQ(three.status, 0) << three.out << three.err;
  // ...the replay's adversarial ties do not.
  const Json d = promote(cand, "--workloads " + w.string(), 3);
  EXPECT_EQ(d.at("decision"), "reject") << d.dump(2);
  EXPECT_THAT(d.at("reason").get<std::string>(), HasSubstr("[ties]"));
  EXPECT_THAT(d.at("reason").get<std::string>(), HasSubstr("duplicate index"));
}

// A killed promotion continues its replay: each run is kept in the store as it finishes, and a
// promote with the same --replay-seed recalls those runs (failures included) instead of running
// them again; another seed draws other inputs and runs everything.
TEST_F(GateFlow, ReplayRunsAreKeptAndRecalledForTheSameSeed) {
  const std::string w = "--workloads " + small_topk_workload().string();
  const std::string cand =
      (test::source_dir() / "tests/candidates/dsa_topk_indexer_cpp").string() +
      "@FAULT=duplicate_on_ties";
  const Json first = promote(cand, w + " --replay-seed 77", 3);
  ASSERT_EQ(first.at("decision"), "reject") << first.dump(2);
  const Json& replay = first.at("replay");
  EXPECT_EQ(replay.at("recalled_runs"), 0);
  EXPECT_GE(replay.at("runs").get<int>(), 2) << "realistic inputs and at least one variant";
  const Json again = promote(cand, w + " --replay-seed 77", 3);
  EXPECT_EQ(again.at("replay").at("recalled_runs"), replay.at("runs"));
  EXPECT_EQ(again.at("replay").at("failing_runs"), replay.at("failing_runs"));
  EXPECT_EQ(again.at("reason"), first.at("reason"));
  const Json other = promote(cand, w + " --replay-seed 78", 3);
  EXPECT_EQ(other.at("replay").at("recalled_runs"), 0);
}

}  // namespace
}  // namespace kh

namespace kh {
namespace {

// A variant that cannot be drawn for a workload (GDN prefill's zero_length needs two sequences)
// is skipped there, not failed: kh promote's replay counts it as skipped and still promotes, and
// kh eval --variant lists it under "skipped" (an error only when it fits no workload chosen).
TEST_F(GateFlow, VariantsSkipTheWorkloadsTheyCannotBeDrawnFor) {
  const std::string prefill = "gdn_prefill_qk4_v8_d128_k_last";
  auto small = [&](const std::string& uuid, std::int64_t seqs) {
    Workload w;
    w.uuid = uuid;
    w.axes = {{"total_seq_len", 6}, {"num_seqs", seqs}, {"len_cu_seqlens", seqs + 1}};
    return WorkloadRecord{prefill, w};
  };
  const fs::path both = dir_.path() / "prefill_both.jsonl";
  save_workload_file(both, {small("00000000-0000-4000-8000-000000000061", 1),
                            small("00000000-0000-4000-8000-000000000062", 2)});
  const fs::path one = dir_.path() / "prefill_one.jsonl";
  save_workload_file(one, {small("00000000-0000-4000-8000-000000000061", 1)});
  const std::string builtin = "builtin:cpu_reference -d " + prefill + " --backend cpu";

  const auto eval = kh(fmt::format("eval {} --workloads {} --variant zero_length --trials 1 --json",
                                   builtin, both.string()));
  ASSERT_EQ(eval.status, 0) << eval.err;
  EXPECT_THAT(eval.err, HasSubstr("needs num_seqs >= 2; the workload has 1"));
  const Json e = json_of(eval);
  ASSERT_EQ(e.at("skipped").size(), 1u) << e.dump(2);
  EXPECT_EQ(e.at("skipped").at(0).at("index"), 0);
  ASSERT_EQ(e.at("results").size(), 1u);
  EXPECT_EQ(e.at("results").at(0).at("status"), "PASSED");
  const auto none = kh(fmt::format("eval {} --workloads {} --variant zero_length --trials 1",
                                   builtin, one.string()));
  EXPECT_EQ(none.status, 1);
  EXPECT_THAT(none.err, HasSubstr("fits none of the 1 workloads"));

  const auto promoted =
      kh(fmt::format("promote {} --workloads {} --timing wall --trials 1 --replay-trials 1 "
                     "--adversarial-trials 1 --json",
                     builtin, both.string()));
  ASSERT_EQ(promoted.status, 0) << promoted.out << promoted.err;
  const Json d = json_of(promoted).at(0);
  EXPECT_EQ(d.at("decision"), "promote") << d.dump(2);
  EXPECT_EQ(d.at("replay").at("failures"), 0);
  EXPECT_EQ(d.at("replay").at("skipped_runs"), 1);  // zero_length on the one-sequence workload
  // ...and the decision's evidence says so, so nobody takes the skip for a clean run.
  EXPECT_THAT(d.at("evidence").dump(), HasSubstr("1 run skipped (first: "));

  // Every command that takes --variant over many workloads leaves the undrawable ones out.
  const auto sweep = kh(fmt::format("sweep {} --workloads {} --variant zero_length --trials 1",
                                    builtin, both.string()));
  EXPECT_EQ(sweep.status, 0) << sweep.err;
  EXPECT_THAT(sweep.err, HasSubstr("kh sweep: skipping 1 workload the variant cannot be drawn"));
}

}  // namespace
}  // namespace kh
