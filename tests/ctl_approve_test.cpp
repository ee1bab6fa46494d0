// Promotions pending a person's approval, end to end through the real binary on the cpu backend:
// kh promote --approve leaves a granted promotion pending (the retained candidate, and the
// library's --source check, unchanged); kh approve makes it the retained candidate with exactly
// one decision, --reject records a reject, a second answer is refused, an approval against a
// baseline replaced meanwhile is refused; kh round submit --approve keeps the round open until
// the answer and close takes it; kh agent --approve stops the loop at a pending promotion and,
// run again after the answer, closes the round with it; the default waits only with a person at
// the terminal; a store of schema version 2 opens and takes the new records.
#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "kh/ctl/round_manifest.h"
#include "kh/spec/dataset.h"
#include "kh/spec/workload.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";
// Small statistics for speed; the planted effect (FAULT=slow computes every head twice) is 2x.
const std::string kPromoteFlags =
    "--backend cpu --rounds 4 --pairs 8 --gate-warmup 2 --trials 1 --min-effect 0.10 "
    "--replay-trials 3 --adversarial-trials 1";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class Approval : public ::testing::Test {
 protected:
  fs::path workloads() const {
    const fs::path path = dir_.path() / "decode.jsonl";
    if (!fs::exists(path)) {
      const Dataset ds = Dataset::open(test::source_dir());
      const auto all = ds.workloads(kDecode);
      save_workload_file(path, {{kDecode, all.at(0)}, {kDecode, all.at(1)}});
    }
    return path;
  }
  std::string store() const { return (dir_.path() / "store").string(); }
  fs::path rounds() const { return dir_.path() / "rounds"; }
  static std::string decode(const std::string& fault) {
    return (test::source_dir() / "tests/candidates/gdn_decode_cpp").string() + "@FAULT=" + fault;
  }
  // Options every gating verb takes, and kh promote's for --promote "...".
  std::string promote_options() const {
    return fmt::format("{} --workloads {} --root {} --cache {} --logs {}", kPromoteFlags,
                       workloads().string(), test::source_dir().string(),
                       (test::source_dir() / "build" / "test-build-cache").string(),
                       (dir_.path() / "logs").string());
  }
  test::CommandResult kh(const std::string& args) const {
    return test::run_command(
        fmt::format("env KH_MEMORY_DIR= {} {} --store {}", KH_BINARY, args, store()));
  }
  static Json json_of(const test::CommandResult& r) {
    EXPECT_FALSE(r.out.empty()) << r.err;
    return r.out.empty() ? Json() : parse_json(r.out, "kh output");
  }
  // kh promote --json's first decision.
  Json promote(const std::string& candidate, const std::string& extra, int expect_status) const {
    const auto r = kh(fmt::format("promote {} {} {} --json", candidate, promote_options(), extra));
    EXPECT_EQ(r.status, expect_status) << r.out << r.err;
    const Json j = json_of(r);
    return j.is_array() && !j.empty() ? j.at(0) : Json();
  }
  // The retained candidate's hash, "" when none.
  std::string retained() const {
    const auto r = kh("retained " + kDecode + " --json");
    const Json j = json_of(r);
    return j.value("retained", Json()).is_object() ? j["retained"]["candidate"].get<std::string>()
                                                   : std::string();
  }
  int source_check(const std::string& fault) const {
    return kh(fmt::format("retained {} --source {}", kDecode, decode(fault))).status;
  }
  test::ScopedTempDir dir_;
};

TEST_F(Approval, APendingPromotionWaitsAndApprovalMakesItRetained) {
  const Json slow = promote(decode("slow"), "", 0);
  ASSERT_EQ(slow.value("decision", ""), "promote") << slow.dump(2);
  const Json pending = promote(decode("none"), "--approve", 0);
  ASSERT_EQ(pending.value("decision", ""), "pending") << pending.dump(2);
  EXPECT_THAT(pending.value("reason", ""), HasSubstr("promote: "));
  const std::string id = pending.at("id");

  // Pending is not retained: kh retained and the library's source check keep their meaning.
  EXPECT_EQ(retained(), slow.at("candidate"));
  EXPECT_EQ(source_check("slow"), 0);
  EXPECT_EQ(source_check("none"), 3);
  const Json shown = json_of(kh("retained " + kDecode + " --json"));
  ASSERT_EQ(shown.at("pending_approval").size(), 1u);
  EXPECT_EQ(shown["pending_approval"][0]["id"], id);
  const Json listed = json_of(kh("approve " + kDecode + " --json"));
  ASSERT_EQ(listed.at("pending").size(), 1u);
  EXPECT_EQ(listed["pending"][0]["candidate"], pending.at("candidate"));
  EXPECT_TRUE(listed["pending"][0]["current"].get<bool>());
  EXPECT_THAT(kh("approve " + kDecode).out, HasSubstr("1 promotion pending approval"));

  const auto approved =
      kh(fmt::format("approve {} {} --note 'read the diff' --json", kDecode, id.substr(0, 12)));
  ASSERT_EQ(approved.status, 0) << approved.err;
  const Json a = json_of(approved);
  EXPECT_EQ(a.at("answer"), "approve");
  EXPECT_EQ(a["decision"]["decision"], "promote");
  EXPECT_EQ(a["retained"], pending.at("candidate"));
  EXPECT_FALSE(a["approval"]["decided_by"].get<std::string>().empty()) << "who";
  EXPECT_FALSE(a["approval"]["created_at"].get<std::string>().empty()) << "when";

  EXPECT_EQ(retained(), pending.at("candidate"));
  EXPECT_EQ(source_check("none"), 0);
  EXPECT_EQ(source_check("slow"), 3);
  const Json after = json_of(kh("retained " + kDecode + " --json"));
  EXPECT_EQ(after["retained"]["evidence"]["approval"]["note"], "read the diff");
  EXPECT_TRUE(after.at("pending_approval").empty());
  int decisions_of_it = 0;
  for (const auto& d : after.at("recent_decisions"))
    decisions_of_it += d.at("candidate") == pending.at("candidate");
  EXPECT_EQ(decisions_of_it, 1) << "exactly one final decision";

  const auto again = kh(fmt::format("approve {} {} --reject", kDecode, id.substr(0, 12)));
  EXPECT_NE(again.status, 0);
  EXPECT_THAT(again.err, HasSubstr("takes one answer"));
  EXPECT_EQ(retained(), pending.at("candidate"));
  EXPECT_THAT(kh("approve " + kDecode).out, HasSubstr("no promotion pending approval"));
}

TEST_F(Approval, RejectRecordsARejectAndKeepsTheRetainedOne) {
  const Json slow = promote(decode("slow"), "", 0);
  const Json pending = promote(decode("none"), "--approve", 0);
  ASSERT_EQ(pending.value("decision", ""), "pending") << pending.dump(2);
  const auto nothing = kh("approve " + kDecode + " --reject");
  EXPECT_NE(nothing.status, 0);
  EXPECT_THAT(nothing.err, HasSubstr("--reject and --note answer one pending promotion"));
  // By candidate name: only FAULT=none of that name waits.
  const auto rejected = kh(fmt::format(
      "approve {} gdn_decode_cpp --reject --note 'a race in the epilogue' --json", kDecode));
  ASSERT_EQ(rejected.status, 0) << rejected.err;
  const Json r = json_of(rejected);
  EXPECT_EQ(r.at("answer"), "reject");
  EXPECT_EQ(r["decision"]["decision"], "reject");
  EXPECT_EQ(retained(), slow.at("candidate"));
  const Json shown = json_of(kh("retained " + kDecode + " --json"));
  const Json newest = shown.at("recent_decisions").at(0);
  EXPECT_EQ(newest.at("decision"), "reject");
  EXPECT_EQ(newest.at("candidate"), pending.at("candidate"));
  EXPECT_THAT(newest.at("reason").get<std::string>(), HasSubstr("a race in the epilogue"));
  EXPECT_EQ(source_check("none"), 3);
}

TEST_F(Approval, AnApprovalAgainstAReplacedBaselineIsRefused) {
  promote(decode("slow"), "", 0);
  const Json first = promote(decode("none"), "--approve", 0);
  const Json second = promote(decode("none"), "--approve", 0);
  ASSERT_EQ(second.value("decision", ""), "pending") << second.dump(2);
  const auto ambiguous = kh("approve " + kDecode + " gdn_decode_cpp");
  EXPECT_NE(ambiguous.status, 0);
  EXPECT_THAT(ambiguous.err, HasSubstr("2 pending promotions match"));
  ASSERT_EQ(kh(fmt::format("approve {} {}", kDecode, first.at("id").get<std::string>())).status, 0);
  const auto stale = kh(fmt::format("approve {} {}", kDecode, second.at("id").get<std::string>()));
  EXPECT_NE(stale.status, 0);
  EXPECT_THAT(stale.err, HasSubstr("a baseline that is gone"));
  EXPECT_THAT(kh("approve " + kDecode).out, HasSubstr("stale"));
  EXPECT_EQ(retained(), first.at("candidate"));
}

TEST_F(Approval, ARoundWaitsForTheAnswerAndClosesWithIt) {
  const std::string round = fmt::format("--rounds-dir {}", rounds().string());
  ASSERT_EQ(
      kh(fmt::format("round start {} {} --root {}", kDecode, round, test::source_dir().string()))
          .status,
      0);
  const auto submitted = kh(fmt::format("round submit {} {} {} --approve --promote {}", kDecode,
                                        round, decode("none"), quote(promote_options())));
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_THAT(submitted.out, HasSubstr(": pending"));
  EXPECT_THAT(submitted.out, HasSubstr("kh approve " + kDecode));
  const RoundManifest m = load_round(round_dir(rounds(), kDecode, 1));
  ASSERT_EQ(m.submissions.size(), 1u);
  const Json d = m.submissions[0].decisions.at(0);
  ASSERT_EQ(d.value("decision", ""), "pending") << d.dump(2);
  EXPECT_EQ(retained(), "") << "a first candidate waiting for approval is not retained either";

  const auto early = kh(fmt::format("round close {} {}", kDecode, round));
  EXPECT_NE(early.status, 0);
  EXPECT_THAT(early.err, HasSubstr("waits for approval"));
  EXPECT_THAT(kh(fmt::format("round resume {} {}", kDecode, round)).out,
              HasSubstr("awaits approval"));

  ASSERT_EQ(kh(fmt::format("approve {} {}", kDecode, d.at("id").get<std::string>())).status, 0);
  const auto closed = kh(fmt::format("round close {} {} --json", kDecode, round));
  ASSERT_EQ(closed.status, 0) << closed.err;
  const Json c = json_of(closed);
  EXPECT_EQ(c.at("decision"), "promote");
  EXPECT_TRUE(c["submissions"][0]["decisions"][0]["approval"]["approved"].get<bool>());
  EXPECT_EQ(retained(), d.at("candidate"));
}

TEST_F(Approval, TheAgentLoopStopsAtAPendingPromotionAndGoesOnAfterTheAnswer) {
  const std::string writer = "cp -r \"$KH_SEED\" \"$KH_OUT/candidate\"";
  const auto agent = [&](const std::string& extra) {
    return kh(fmt::format(
        "agent {} --cmd {} --seed {} --rounds-dir {} --root {} --promote {} "
        "--json {}",
        kDecode, quote(writer), (test::source_dir() / "tests/candidates/gdn_decode_cpp").string(),
        rounds().string(), test::source_dir().string(), quote(promote_options()), extra));
  };
  const auto first = agent("--approve --rounds 3");
  ASSERT_EQ(first.status, 0) << first.err;
  const Json j = json_of(first);
  EXPECT_TRUE(j.at("awaiting_approval").get<bool>());
  ASSERT_EQ(j.at("rounds").size(), 1u) << "no round after a promotion waiting for a person";
  EXPECT_EQ(j["rounds"][0]["decision"], "pending");
  EXPECT_THAT(first.err, HasSubstr("waits for approval"));
  auto all = load_rounds(rounds(), kDecode);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, RoundStatus::kSubmitted) << "the round stays open";
  EXPECT_EQ(retained(), "");
  const Json listed = json_of(kh("approve " + kDecode + " --json"));
  ASSERT_EQ(listed.at("pending").size(), 1u);

  // Run again before the answer: still waiting, no agent run.
  const auto waiting = agent("--approve --rounds 1");
  ASSERT_EQ(waiting.status, 0) << waiting.err;
  EXPECT_TRUE(json_of(waiting).at("awaiting_approval").get<bool>());
  EXPECT_EQ(load_rounds(rounds(), kDecode).at(0).agent_runs.size(), 1u);

  ASSERT_EQ(kh(fmt::format("approve {} {}", kDecode, listed["pending"][0]["id"].get<std::string>()))
                .status,
            0);
  const auto after = agent("--approve --rounds 1");
  ASSERT_EQ(after.status, 0) << after.err;
  EXPECT_FALSE(json_of(after).at("awaiting_approval").get<bool>());
  all = load_rounds(rounds(), kDecode);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, RoundStatus::kClosed);
  EXPECT_EQ(all[0].decision, RoundRecord::Decision::kPromote);
  EXPECT_EQ(retained(), listed["pending"][0]["candidate"]);
}

TEST_F(Approval, TheDefaultWaitsOnlyWithAPersonAtTheTerminal) {
  if (test::run_command("command -v script").status != 0)
    GTEST_SKIP() << "no `script` (util-linux) to give kh a terminal";
  // One store and rounds folder per run; each submits a definition's first candidate.
  const auto submit = [&](const std::string& name, const std::string& flags, bool terminal) {
    const fs::path here = dir_.path() / name;
    const std::string common = fmt::format("--rounds-dir {} --store {}", (here / "rounds").string(),
                                           (here / "store").string());
    const auto start =
        test::run_command(fmt::format("env KH_MEMORY_DIR= {} round start {} {} --root {}",
                                      KH_BINARY, kDecode, common, test::source_dir().string()));
    EXPECT_EQ(start.status, 0) << start.err;
    const std::string command =
        fmt::format("env KH_MEMORY_DIR= {} round submit {} {} {} {} --promote {}", KH_BINARY,
                    kDecode, common, decode("none"), flags, quote(promote_options()));
    const auto r = test::run_command(
        terminal ? fmt::format("script -qec {} /dev/null < /dev/null", quote(command)) : command);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    const RoundManifest m = load_round(round_dir(here / "rounds", kDecode, 1));
    return m.submissions.empty() ? std::string()
                                 : m.submissions[0].decisions.at(0).value("decision", "");
  };
  EXPECT_EQ(submit("script", "", false), "promote") << "no terminal: no wait";
  EXPECT_EQ(submit("person", "", true), "pending") << "a person at the terminal approves";
  EXPECT_EQ(submit("person_off", "--no-approve", true), "promote");
  const auto both = kh(fmt::format("round submit {} x --approve --no-approve", kDecode));
  EXPECT_NE(both.status, 0);
  EXPECT_THAT(both.err, HasSubstr("excludes"));
}

TEST_F(Approval, AStoreOfSchemaVersionTwoOpensAndTakesTheNewRecords) {
  {
    fs::create_directories(store());
    SqliteDb db(fs::path(store()) / "store.db");
    ASSERT_EQ(migrate_schema(db, schema_migrations(), 2), 2);
    db.exec(fmt::format(
        "INSERT INTO candidates (hash, name, definition, created_at) "
        "VALUES ('abc', 'old', '{0}', '2026-01-01T00:00:00.000Z');"
        "INSERT INTO decisions (id, definition, candidate, against, decision, reason, evidence, "
        "created_at) VALUES ('d1', '{0}', 'abc', NULL, 'promote', 'first', '{{}}', "
        "'2026-01-02T00:00:00.000Z')",
        kDecode));
  }
  EXPECT_EQ(retained(), "abc");
  const Json listed = json_of(kh("approve " + kDecode + " --json"));
  EXPECT_TRUE(listed.at("pending").empty());
  EXPECT_EQ(listed.at("retained"), "abc");
  ASSERT_EQ(kh(fmt::format("note {} 'kept across the migration' --root {}", kDecode,
                           test::source_dir().string()))
                .status,
            0);
  SqliteDb db(fs::path(store()) / "store.db");
  EXPECT_EQ(database_schema_version(db), newest_schema_version());
}

}  // namespace
}  // namespace kh::ctl
