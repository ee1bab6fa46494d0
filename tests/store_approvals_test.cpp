// The records of store schema version 3: promotions pending a person's approval, the answers they
// get, reconnaissance notes. A pending promotion is not retained; approving it writes exactly one
// final decision (promote) and makes it the retained candidate, rejecting it one reject decision;
// a second answer is refused without writing; an approval gated against a baseline that is no
// longer retained is refused; a version-2 database migrates keeping its rows; bundles carry
// pending and answered states and notes (and an answer given elsewhere to a promotion answered
// here does not add a second decision).
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/artifact_store.h"
#include "kh/store/bundle.h"
#include "kh/store/promotion_approval.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh {
namespace {

using test::error_of;
using ::testing::HasSubstr;

std::string export_text(ArtifactStore& store, const BundleExportOptions& o = {}) {
  std::ostringstream out;
  export_bundle(store, o, out);
  return out.str();
}

BundleImportStats import_text(ArtifactStore& store, const std::string& text) {
  std::istringstream in(text);
  return import_bundle(store, in, "test.khb");
}

CandidateRecord put_candidate(ArtifactStore& s, const std::string& name) {
  CandidateRecord c;
  c.name = name;
  c.definition = "def";
  c.manifest_blob = s.put_blob("manifest of " + name);
  c.sources = {{"k.cu", s.put_blob("source of " + name)}};
  c.hash = sha256_hex(name);
  c.created_at = "2026-01-01T00:00:00.000Z";
  s.put_candidate(c);
  return c;
}

class Approvals : public ::testing::Test {
 protected:
  Approvals() : store(StoreLocation{dir.path() / "kh"}) {
    store.put_definition("def", {{"name", "def"}});
    old_one = put_candidate(store, "old");
    fast = put_candidate(store, "fast");
    faster = put_candidate(store, "faster");
    DecisionRecord d;
    d.definition = "def";
    d.candidate = old_one.hash;
    d.decision = "promote";
    d.reason = "promote: the definition's first candidate";
    d.created_at = "2026-01-02T00:00:00.000Z";
    store.put_decision(d);
  }

  // What kh promote --approve stores for a promotion it grants.
  PendingPromotionRecord pending(const CandidateRecord& c, const std::string& against,
                                 const std::string& created_at) {
    PendingPromotionRecord p;
    p.definition = "def";
    p.candidate = c.hash;
    p.against = against;
    p.reason = "promote: +8.0 % [6.1, 9.9] over the full distribution";
    p.evidence = {{"decision", "promote"},
                  {"reason", p.reason},
                  {"evidence", {"full gate: win", "replay: 100 trials per workload, 0 failing"}},
                  {"gpu", "cpu"}};
    p.requested_by = "agent@box";
    p.created_at = created_at;
    p.id = store.put_pending_promotion(p);
    return p;
  }

  std::int64_t count(const std::string& sql) { return store.db().query_int(sql); }
  std::string retained_hash(ArtifactStore& s) {
    const auto r = s.retained("def");
    return r ? r->candidate : "";
  }

  test::ScopedTempDir dir;
  ArtifactStore store;
  CandidateRecord old_one, fast, faster;
};

TEST_F(Approvals, APendingPromotionIsNotRetained) {
  const PendingPromotionRecord p = pending(fast, old_one.hash, "2026-02-01T00:00:00.000Z");
  EXPECT_EQ(p.id, pending_promotion_id(p));
  EXPECT_EQ(retained_hash(store), old_one.hash) << "pending is not retained";
  EXPECT_TRUE(store.decisions("def", fast.hash).empty()) << "no decision before the answer";
  const auto waiting = store.pending_promotions("def");
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].id, p.id);
  EXPECT_EQ(waiting[0].evidence, p.evidence);
  EXPECT_EQ(waiting[0].requested_by, "agent@box");
  EXPECT_EQ(pending_promotion_id(waiting[0]), p.id) << "the id recomputes from the stored row";
  EXPECT_TRUE(pending_promotion_is_current(store, waiting[0]));
  EXPECT_FALSE(store.approval(p.id));
  store.put_pending_promotion(p);
  EXPECT_EQ(count("SELECT count(*) FROM pending_promotions"), 1) << "puts are idempotent";
  EXPECT_TRUE(store.pending_promotions("other").empty());

  PendingPromotionRecord stranger = p;
  stranger.id = "";
  stranger.candidate = "no-such-candidate";
  EXPECT_THAT(error_of([&] { store.put_pending_promotion(stranger); }), HasSubstr("FOREIGN KEY"));
}

TEST_F(Approvals, ApprovalMakesItRetainedWithExactlyOneDecision) {
  const PendingPromotionRecord p = pending(fast, old_one.hash, "2026-02-01T00:00:00.000Z");
  const AnsweredPromotion a =
      answer_pending_promotion(store, {p.id, true, "alice@desk", "read the diff"});
  EXPECT_EQ(retained_hash(store), fast.hash);
  const auto decisions = store.decisions("def", fast.hash);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].id, a.decision.id);
  EXPECT_EQ(decisions[0].decision, "promote");
  EXPECT_EQ(decisions[0].against, old_one.hash);
  EXPECT_EQ(decisions[0].reason, p.reason) << "kh promote's own reason";
  EXPECT_EQ(decisions[0].evidence.at("approval").at("by"), "alice@desk");
  EXPECT_EQ(decisions[0].evidence.at("approval").at("pending"), p.id);
  EXPECT_EQ(decisions[0].evidence.at("evidence").back(),
            "approved by alice@desk at " + a.approval.created_at + ": read the diff");
  EXPECT_EQ(decision_id(decisions[0]), decisions[0].id);
  const auto answer = store.approval(p.id);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->approved);
  EXPECT_EQ(answer->decision, a.decision.id);
  EXPECT_EQ(answer->decided_by, "alice@desk");
  EXPECT_EQ(answer->note, "read the diff");
  EXPECT_TRUE(store.pending_promotions("def").empty()) << "answered: no longer waiting";
  EXPECT_EQ(store.pending_promotions("def", false).size(), 1u);

  // One answer: a second, either way, is refused and writes nothing.
  EXPECT_THAT(error_of([&] {
                answer_pending_promotion(store, {p.id, false, "bob@desk", ""});
              }),
              HasSubstr("was approved already by alice@desk"));
  EXPECT_THAT(error_of([&] {
                answer_pending_promotion(store, {p.id, true, "bob@desk", ""});
              }),
              HasSubstr("it takes one answer"));
  EXPECT_EQ(store.decisions("def", fast.hash).size(), 1u);
  EXPECT_EQ(count("SELECT count(*) FROM approvals"), 1);
  ApprovalRecord other = *answer;
  other.decision = store.decisions("def", old_one.hash).at(0).id;
  other.approved = false;
  EXPECT_THAT(error_of([&] { store.put_approval(other); }), HasSubstr("takes one answer"));
  EXPECT_THAT(error_of([&] {
                answer_pending_promotion(store, {"nope", true, "bob@desk", ""});
              }),
              HasSubstr("no pending promotion nope"));
}

TEST_F(Approvals, RejectionRecordsARejectAndRetainsNothingNew) {
  const PendingPromotionRecord p = pending(fast, old_one.hash, "2026-02-01T00:00:00.000Z");
  const AnsweredPromotion a =
      answer_pending_promotion(store, {p.id, false, "alice@desk", "a race in the epilogue"});
  EXPECT_EQ(retained_hash(store), old_one.hash);
  const auto decisions = store.decisions("def", fast.hash);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].decision, "reject");
  EXPECT_EQ(decisions[0].reason,
            "reject: alice@desk refused the promotion: a race in the epilogue");
  EXPECT_EQ(decisions[0].evidence.at("decision"), "reject");
  EXPECT_FALSE(decisions[0].evidence.at("approval").at("approved").get<bool>());
  EXPECT_FALSE(store.approval(p.id)->approved);
  EXPECT_EQ(a.decision.id, decisions[0].id);
}

TEST_F(Approvals, AnApprovalAgainstABaselineThatIsGoneIsRefused) {
  const PendingPromotionRecord first = pending(fast, old_one.hash, "2026-02-01T00:00:00.000Z");
  const PendingPromotionRecord second = pending(faster, old_one.hash, "2026-02-02T00:00:00.000Z");
  answer_pending_promotion(store, {first.id, true, "alice@desk", ""});
  ASSERT_EQ(retained_hash(store), fast.hash);
  EXPECT_FALSE(pending_promotion_is_current(store, second));
  const std::string message = error_of([&] {
    answer_pending_promotion(store, {second.id, true, "alice@desk", ""});
  });
  EXPECT_THAT(message, HasSubstr("was gated against old"));
  EXPECT_THAT(message, HasSubstr("the retained candidate is now fast"));
  EXPECT_TRUE(store.decisions("def", faster.hash).empty()) << "a refused approval writes nothing";
  EXPECT_FALSE(store.approval(second.id));
  EXPECT_EQ(retained_hash(store), fast.hash);
  // It can still be rejected.
  answer_pending_promotion(store, {second.id, false, "alice@desk", "stale"});
  EXPECT_EQ(store.decisions("def", faster.hash).at(0).decision, "reject");
  EXPECT_EQ(retained_hash(store), fast.hash);
}

TEST_F(Approvals, NotesReadBackInOrder) {
  NoteRecord n;
  n.definition = "def";
  n.text = "FlashMLA splits the KV sequence \xff across 132 SMs";
  n.reference = "https://github.com/deepseek-ai/FlashMLA";
  n.author = "alice@desk";
  n.created_at = "2026-02-02T00:00:00.000Z";
  const std::string id = store.put_note(n);
  NoteRecord older = n;
  older.text = "the merge kernel costs 2.4 us";
  older.reference = "";
  older.created_at = "2026-02-01T00:00:00.000Z";
  store.put_note(older);
  store.put_note(older);
  const auto notes = store.notes("def");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].text, "the merge kernel costs 2.4 us") << "oldest first";
  EXPECT_EQ(notes[1].id, id);
  EXPECT_EQ(notes[1].text, "FlashMLA splits the KV sequence \xef\xbf\xbd across 132 SMs");
  EXPECT_EQ(note_id(notes[1]), id) << "the id hashes the text as stored";
  EXPECT_EQ(notes[1].reference, n.reference);
  EXPECT_TRUE(store.notes("other").empty());
}

TEST_F(Approvals, BundlesCarryPendingAndAnsweredStatesAndNotes) {
  const PendingPromotionRecord answered = pending(fast, old_one.hash, "2000-01-01T00:00:00.000Z");
  answer_pending_promotion(store, {answered.id, true, "alice@desk", ""});
  const PendingPromotionRecord waiting = pending(faster, fast.hash, "2000-01-02T00:00:00.000Z");
  NoteRecord n;
  n.definition = "def";
  n.text = "two-kernel route: split then merge";
  n.author = "alice@desk";
  store.put_note(n);

  const std::string text = export_text(store);
  EXPECT_EQ(Json::parse(text.substr(0, text.find('\n'))).at("schema"), newest_schema_version());
  EXPECT_LT(text.find("\"t\":\"decisions\""), text.find("\"t\":\"pending_promotions\""));
  EXPECT_LT(text.find("\"t\":\"pending_promotions\""), text.find("\"t\":\"approvals\""));
  ArtifactStore home(StoreLocation{dir.path() / "home"});
  const BundleImportStats stats = import_text(home, text);
  EXPECT_EQ(stats.tables.at("pending_promotions").added, 2);
  EXPECT_EQ(stats.tables.at("approvals").added, 1);
  EXPECT_EQ(stats.tables.at("reconnaissance_notes").added, 1);
  EXPECT_EQ(retained_hash(home), fast.hash) << "the approved one is retained at home too";
  const auto still = home.pending_promotions("def");
  ASSERT_EQ(still.size(), 1u) << "the waiting one still waits";
  EXPECT_EQ(still[0].id, waiting.id);
  EXPECT_TRUE(home.approval(answered.id)->approved);
  ASSERT_EQ(home.notes("def").size(), 1u);
  EXPECT_EQ(home.notes("def")[0].text, n.text);
  EXPECT_EQ(import_text(home, text).rows_added(), 0) << "importing twice adds nothing";

  // Answered at home, then exported `since` the answer: the old pending promotion it names
  // travels with it, or the import would break its foreign key.
  answer_pending_promotion(home, {waiting.id, false, "bob@home", "not now"});
  const std::string answer_time = home.approval(waiting.id)->created_at;
  ArtifactStore away(StoreLocation{dir.path() / "away"});
  import_text(away, export_text(home, {answer_time, {}}));
  ASSERT_TRUE(away.pending_promotion(waiting.id));
  EXPECT_FALSE(away.approval(waiting.id)->approved);
  EXPECT_EQ(away.decisions("def", faster.hash).at(0).decision, "reject");
  EXPECT_FALSE(away.pending_promotion(answered.id))
      << "older than `since` and named by nothing new";
}

TEST_F(Approvals, AnAnswerFromElsewhereDoesNotAddASecondDecision) {
  const PendingPromotionRecord p = pending(fast, old_one.hash, "2026-02-01T00:00:00.000Z");
  ArtifactStore elsewhere(StoreLocation{dir.path() / "elsewhere"});
  import_text(elsewhere, export_text(store));
  answer_pending_promotion(elsewhere, {p.id, false, "bob@far", "no"});
  answer_pending_promotion(store, {p.id, true, "alice@desk", "yes"});
  import_text(store, export_text(elsewhere));
  const auto decisions = store.decisions("def", fast.hash);
  ASSERT_EQ(decisions.size(), 1u) << "one final decision per pending promotion";
  EXPECT_EQ(decisions[0].decision, "promote");
  EXPECT_TRUE(store.approval(p.id)->approved) << "the local answer stands";
  EXPECT_EQ(retained_hash(store), fast.hash);
}

TEST(ApprovalsSchema, VersionTwoDatabaseMigratesKeepingItsRows) {
  test::ScopedTempDir dir;
  const StoreLocation where{dir.path()};
  ASSERT_GE(newest_schema_version(), 3);
  {
    // A store as a schema-2 kh left it: a candidate promoted.
    SqliteDb db(where.database());
    EXPECT_EQ(migrate_schema(db, schema_migrations(), 2), 2);
    db.exec(
        "INSERT INTO candidates (hash, name, definition, created_at) "
        "VALUES ('abc', 'old', 'def', '2026-01-01T00:00:00.000Z');"
        "INSERT INTO decisions (id, definition, candidate, against, decision, reason, evidence, "
        "created_at) VALUES ('d1', 'def', 'abc', NULL, 'promote', 'first', '{}', "
        "'2026-01-02T00:00:00.000Z')");
    EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'approvals'"), 0);
  }
  ArtifactStore store(where);
  EXPECT_EQ(store.schema_version(), newest_schema_version());
  ASSERT_TRUE(store.retained("def"));
  EXPECT_EQ(store.retained("def")->candidate, "abc");
  for (const char* table : {"pending_promotions", "approvals", "reconnaissance_notes"})
    EXPECT_EQ(store.db().query_int(std::string("SELECT count(*) FROM sqlite_master WHERE type = "
                                               "'table' AND name = '") +
                                   table + "'"),
              1)
        << table;
  EXPECT_TRUE(store.pending_promotions("def").empty());
  // And the migrated store takes the new records.
  CandidateRecord c;
  c.hash = "fast";
  c.name = "fast";
  c.definition = "def";
  store.put_candidate(c);
  PendingPromotionRecord p;
  p.definition = "def";
  p.candidate = "fast";
  p.against = "abc";
  p.reason = "promote: +5 %";
  p.requested_by = "x@y";
  p.id = store.put_pending_promotion(p);
  answer_pending_promotion(store, {p.id, true, "x@y", ""});
  EXPECT_EQ(store.retained("def")->candidate, "fast");
}

TEST(ApprovalsSchema, VersionTwoBundleImportsIntoAVersionThreeStore) {
  test::ScopedTempDir dir;
  // What a schema-2 kh exported: gate records, no pending promotions or notes.
  const std::vector<std::string> lines = {
      R"({"format":"kh-bundle","version":1,"schema":2,"created_at":"2026-01-03T00:00:00.000Z","since":"","sweeps":[]})",
      R"({"t":"candidates","r":{"hash":"abc","name":"old","definition":"def","parent":"","params":"{}","manifest_blob":"","created_at":"2026-01-01T00:00:00.000Z"}})",
      R"({"t":"decisions","r":{"id":"d1","definition":"def","candidate":"abc","against":null,"decision":"promote","reason":"first","evidence":"{}","created_at":"2026-01-02T00:00:00.000Z"}})"};
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  ArtifactStore store(StoreLocation{dir.path() / "new"});
  const BundleImportStats stats = import_text(store, text);
  EXPECT_EQ(stats.rows_added(), 2);
  EXPECT_EQ(store.retained("def")->candidate, "abc");
}

}  // namespace
}  // namespace kh
