// The gate records of store schema version 2 (noise floors, gates, promotion decisions): each
// reads back as it was put with a recomputable id, puts are idempotent, the retained candidate is
// the newest promotion, the latest noise floor is chosen by definition, GPU and timing method, a
// version-1 database migrates keeping its rows, bundles carry the records (and a version-1 bundle
// still imports), and the CHECK constraints refuse values outside their enumerations.
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/artifact_store.h"
#include "kh/store/bundle.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh {
namespace {

using test::error_of;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Doubles equal, NaN equal to NaN.
void expect_same(double a, double b, const char* what) {
  if (std::isnan(a))
    EXPECT_TRUE(std::isnan(b)) << what << ": " << b;
  else
    EXPECT_EQ(a, b) << what;
}

void expect_same(const NoiseFloorRecord& a, const NoiseFloorRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.definition, b.definition);
  EXPECT_EQ(a.candidate, b.candidate);
  EXPECT_EQ(a.gpu, b.gpu);
  EXPECT_EQ(a.timing_method, b.timing_method);
  EXPECT_EQ(a.environment, b.environment);
  expect_same(a.minimum_effect, b.minimum_effect, "minimum_effect");
  expect_same(a.distribution_spread, b.distribution_spread, "distribution_spread");
  expect_same(a.median_workload_spread, b.median_workload_spread, "median_workload_spread");
  expect_same(a.max_workload_spread, b.max_workload_spread, "max_workload_spread");
  EXPECT_EQ(a.workload_spread, b.workload_spread);
  EXPECT_EQ(a.options, b.options);
  EXPECT_EQ(a.created_at, b.created_at);
}

void expect_same(const GateRecord& a, const GateRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.definition, b.definition);
  EXPECT_EQ(a.candidate_a, b.candidate_a);
  EXPECT_EQ(a.candidate_b, b.candidate_b);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.gpu, b.gpu);
  EXPECT_EQ(a.timing_method, b.timing_method);
  EXPECT_EQ(a.environment, b.environment);
  EXPECT_EQ(a.objective, b.objective);
  expect_same(a.min_effect, b.min_effect, "min_effect");
  expect_same(a.estimate, b.estimate, "estimate");
  expect_same(a.lo, b.lo, "lo");
  expect_same(a.hi, b.hi, "hi");
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_EQ(a.both_correct, b.both_correct);
  EXPECT_EQ(a.result, b.result);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.options, b.options);
  EXPECT_EQ(a.created_at, b.created_at);
}

void expect_same(const DecisionRecord& a, const DecisionRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.definition, b.definition);
  EXPECT_EQ(a.candidate, b.candidate);
  EXPECT_EQ(a.against, b.against);
  EXPECT_EQ(a.decision, b.decision);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.evidence, b.evidence);
  EXPECT_EQ(a.created_at, b.created_at);
}

// A store with two candidates of "def" and one environment.
class GateRecords : public ::testing::Test {
 protected:
  GateRecords() : store(StoreLocation{dir.path() / "kh"}) {
    store.put_definition("def", {{"name", "def"}});
    a = candidate(store, "baseline", "2026-01-01T00:00:00.000Z");
    b = candidate(store, "challenger", "2026-01-02T00:00:00.000Z");
    store.put_environment({"env", {{"gpu", "H200"}, {"driver", "570"}}});
  }

  static CandidateRecord candidate(ArtifactStore& s, const std::string& name,
                                   const std::string& created_at) {
    CandidateRecord c;
    c.name = name;
    c.definition = "def";
    c.manifest_blob = s.put_blob("manifest of " + name);
    c.sources = {{"k.cu", s.put_blob("source of " + name)}};
    c.hash = sha256_hex(name);
    c.created_at = created_at;
    s.put_candidate(c);
    return c;
  }

  NoiseFloorRecord noise_floor(const std::string& gpu, const std::string& method,
                               const std::string& created_at) const {
    NoiseFloorRecord r;
    r.definition = "def";
    r.candidate = a.hash;
    r.gpu = gpu;
    r.timing_method = method;
    r.environment = "env";
    r.minimum_effect = 0.012;
    r.distribution_spread = 0.006;
    r.median_workload_spread = 0.004;
    r.max_workload_spread = std::nan("");  // a workload without an interval
    r.workload_spread = {{"w1", 0.004}, {"w2", 0.0125}};
    r.options = {{"rounds", 8}, {"iterations", 50}, {"bootstrap", {{"resamples", 2000}}}};
    r.created_at = created_at;
    return r;
  }

  GateRecord gate_record(const std::string& stage, const std::string& created_at) const {
    GateRecord r;
    r.definition = "def";
    r.candidate_a = a.hash;
    r.candidate_b = b.hash;
    r.stage = stage;
    r.gpu = "NVIDIA H200";
    r.timing_method = "cupti";
    r.environment = "";
    r.objective = "mean_speedup";
    r.min_effect = 0.01;
    r.estimate = 1.08;
    r.lo = std::nan("");
    r.hi = kInf;
    r.verdict = "win";
    r.both_correct = false;
    r.result = {{"workloads", {{{"uuid", "w1"}, {"verdict", "win"}, {"lo", 1.02}}}},
                {"groups", Json::array()}};
    r.samples = {{"w1", {{1.5e-5, 1.4e-5}, {1.6e-5, 1.3e-5}}}};
    r.options = {{"rounds", 4}, {"holm", true}};
    r.created_at = created_at;
    return r;
  }

  DecisionRecord decision(const CandidateRecord& c, const std::string& what,
                          const std::string& created_at, const std::string& against = "") const {
    DecisionRecord r;
    r.definition = "def";
    r.candidate = c.hash;
    r.against = against;
    r.decision = what;
    r.reason = what + " of " + c.name;
    r.evidence = {{"gates", {"g1", "g2"}}, {"replay", {{"wins", 3}, {"losses", 0}}}};
    r.created_at = created_at;
    return r;
  }

  std::int64_t count(const std::string& table) {
    return store.db().query_int("SELECT count(*) FROM " + table);
  }

  test::ScopedTempDir dir;
  ArtifactStore store;
  CandidateRecord a, b;
};

TEST_F(GateRecords, NoiseFloorRoundTripsWithItsId) {
  const NoiseFloorRecord put = noise_floor("NVIDIA H200", "cupti", "2026-02-01T00:00:00.000Z");
  EXPECT_EQ(store.put_noise_floor(put), noise_floor_id(put)) << "put returns the id";
  const auto got = store.latest_noise_floor("def", "NVIDIA H200", "cupti");
  ASSERT_TRUE(got);
  NoiseFloorRecord expected = put;
  expected.id = noise_floor_id(put);
  expect_same(*got, expected);
  EXPECT_EQ(got->id.size(), 64u);
  EXPECT_EQ(noise_floor_id(*got), got->id) << "the id recomputes from the stored record";
  EXPECT_TRUE(std::isnan(got->max_workload_spread));
  EXPECT_EQ(got->workload_spread.at("w2"), 0.0125);

  // created_at filled when empty; an absent environment is NULL in its column, "" when read.
  NoiseFloorRecord bare = noise_floor("cpu", "wall", "");
  bare.environment = "";
  store.put_noise_floor(bare);
  const auto cpu = store.latest_noise_floor("def", "cpu", "wall");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->created_at.size(), 24u) << cpu->created_at;
  EXPECT_EQ(cpu->environment, "");
  EXPECT_EQ(store.db().query_int("SELECT count(*) FROM noise_floors WHERE environment IS NULL"), 1);
}

TEST_F(GateRecords, GateRoundTripsWithItsId) {
  const GateRecord put = gate_record("representative", "2026-02-01T00:00:00.000Z");
  const std::string id = store.put_gate(put);
  EXPECT_EQ(id, gate_id(put));
  const auto got = store.gate(id);
  ASSERT_TRUE(got);
  GateRecord expected = put;
  expected.id = id;
  expect_same(*got, expected);
  EXPECT_EQ(gate_id(*got), id);
  EXPECT_TRUE(std::isnan(got->lo));
  EXPECT_TRUE(std::isinf(got->hi));
  EXPECT_FALSE(got->both_correct);
  EXPECT_FALSE(store.gate("no-such-gate"));

  GateRecord aa = gate_record("aa", "2026-02-03T00:00:00.000Z");
  aa.candidate_b = a.hash;
  aa.environment = "env";
  aa.verdict = "tie";
  aa.both_correct = true;
  store.put_gate(aa);
  GateRecord other = gate_record("gate", "2026-02-02T00:00:00.000Z");
  other.definition = "other";
  store.put_gate(other);

  const auto of_def = store.gates("def");
  ASSERT_EQ(of_def.size(), 2u);
  EXPECT_EQ(of_def[0].stage, "aa") << "newest first";
  EXPECT_EQ(of_def[0].environment, "env");
  EXPECT_TRUE(of_def[0].both_correct);
  EXPECT_EQ(of_def[1].stage, "representative");
  const auto all = store.gates();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].definition, "other");
  EXPECT_TRUE(store.gates("nothing").empty());

  // Candidates are checked.
  GateRecord stranger = gate_record("full", "2026-02-04T00:00:00.000Z");
  stranger.candidate_b = "no-such-candidate";
  EXPECT_THAT(error_of([&] { store.put_gate(stranger); }), HasSubstr("FOREIGN KEY"));
}

TEST_F(GateRecords, DecisionRoundTripsWithItsId) {
  DecisionRecord put = decision(b, "promote", "2026-02-01T00:00:00.000Z", a.hash);
  put.reason = "faster \xff by 8%";  // invalid UTF-8 is replaced before hashing and storing
  const std::string id = store.put_decision(put);
  store.put_decision(decision(a, "promote", "2026-01-01T00:00:00.000Z"));
  const auto of_b = store.decisions("def", b.hash);
  ASSERT_EQ(of_b.size(), 1u);
  const DecisionRecord& got = of_b[0];
  EXPECT_EQ(got.reason, "faster \xef\xbf\xbd by 8%");
  DecisionRecord expected = put;
  expected.reason = got.reason;
  expected.id = decision_id(expected);
  expect_same(got, expected);
  EXPECT_EQ(got.id, id);
  EXPECT_EQ(decision_id(got), got.id);

  const auto all = store.decisions();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].candidate, b.hash) << "newest first";
  EXPECT_EQ(all[1].candidate, a.hash);
  EXPECT_EQ(all[1].against, "");
  EXPECT_EQ(store.db().query_int("SELECT count(*) FROM decisions WHERE against IS NULL"), 1);
  EXPECT_EQ(store.decisions("", a.hash).size(), 1u);
  EXPECT_TRUE(store.decisions("other").empty());

  DecisionRecord stranger = decision(a, "archive", "2026-02-02T00:00:00.000Z", "no-such-one");
  EXPECT_THAT(error_of([&] { store.put_decision(stranger); }), HasSubstr("FOREIGN KEY"));
}

TEST_F(GateRecords, PutsAreIdempotent) {
  const NoiseFloorRecord floor = noise_floor("NVIDIA H200", "cupti", "2026-02-01T00:00:00.000Z");
  const GateRecord g = gate_record("gate", "2026-02-01T00:00:00.000Z");
  const DecisionRecord d = decision(b, "promote", "2026-02-01T00:00:00.000Z", a.hash);
  for (int i = 0; i < 2; ++i) {
    store.put_noise_floor(floor);
    store.put_gate(g);
    store.put_decision(d);
  }
  EXPECT_EQ(count("noise_floors"), 1);
  EXPECT_EQ(count("gates"), 1);
  EXPECT_EQ(count("decisions"), 1);
  // With its id given, a put of a changed record keeps the first row.
  GateRecord changed = g;
  changed.id = gate_id(g);
  changed.verdict = "loss";
  EXPECT_EQ(store.put_gate(changed), changed.id);
  EXPECT_EQ(count("gates"), 1);
  EXPECT_EQ(store.gate(changed.id)->verdict, "win");
  // A later measurement is a record of its own.
  store.put_noise_floor(noise_floor("NVIDIA H200", "cupti", "2026-02-02T00:00:00.000Z"));
  store.put_decision(decision(b, "promote", "2026-02-02T00:00:00.000Z", a.hash));
  EXPECT_EQ(count("noise_floors"), 2);
  EXPECT_EQ(count("decisions"), 2);
}

TEST_F(GateRecords, RetainedIsTheNewestPromotion) {
  EXPECT_FALSE(store.retained("def")) << "nothing promoted yet";
  const CandidateRecord c = candidate(store, "third", "2026-01-03T00:00:00.000Z");
  store.put_decision(decision(a, "reject", "2026-02-01T00:00:00.000Z"));
  EXPECT_FALSE(store.retained("def")) << "a rejection retains nothing";
  store.put_decision(decision(a, "promote", "2026-02-02T00:00:00.000Z"));
  store.put_decision(decision(b, "archive", "2026-02-03T00:00:00.000Z", a.hash));
  store.put_decision(decision(c, "reject", "2026-02-04T00:00:00.000Z", a.hash));
  ASSERT_TRUE(store.retained("def"));
  EXPECT_EQ(store.retained("def")->candidate, a.hash) << "archive and reject change nothing";
  EXPECT_FALSE(store.retained("other"));

  store.put_decision(decision(b, "promote", "2026-02-05T00:00:00.000Z", a.hash));
  EXPECT_EQ(store.retained("def")->candidate, b.hash);
  EXPECT_EQ(store.retained("def")->against, a.hash);
  // Same created_at: the later put wins each time, whichever id sorts first.
  for (const CandidateRecord* next : std::vector<const CandidateRecord*>{&c, &a, &b, &c}) {
    DecisionRecord d = decision(*next, "promote", "2026-02-06T00:00:00.000Z", b.hash);
    d.reason += " again";  // a record of its own even where an earlier one matches
    d.reason += std::to_string(count("decisions"));
    store.put_decision(d);
    EXPECT_EQ(store.retained("def")->candidate, next->hash) << next->name;
  }
  // An older promotion put later does not displace a newer one.
  store.put_decision(decision(a, "promote", "2026-02-04T12:00:00.000Z", b.hash));
  EXPECT_EQ(store.retained("def")->candidate, c.hash);
  EXPECT_EQ(store.decisions("def").front().candidate, c.hash) << "newest first";
}

TEST_F(GateRecords, LatestNoiseFloorIsByDefinitionGpuAndMethod) {
  auto put = [&](const std::string& definition, const std::string& gpu, const std::string& method,
                 const std::string& created_at, double minimum_effect) {
    NoiseFloorRecord r = noise_floor(gpu, method, created_at);
    r.definition = definition;
    r.minimum_effect = minimum_effect;
    store.put_noise_floor(r);
  };
  put("def", "H200", "cupti", "2026-02-01T00:00:00.000Z", 0.01);
  put("def", "H200", "cupti", "2026-02-03T00:00:00.000Z", 0.02);
  put("def", "H200", "cupti", "2026-02-02T00:00:00.000Z", 0.03);  // put later, measured earlier
  put("def", "H200", "events", "2026-02-04T00:00:00.000Z", 0.04);
  put("def", "B200", "cupti", "2026-02-05T00:00:00.000Z", 0.05);
  put("other", "H200", "cupti", "2026-02-06T00:00:00.000Z", 0.06);
  auto effect = [&](const std::string& definition, const std::string& gpu,
                    const std::string& method) {
    const auto r = store.latest_noise_floor(definition, gpu, method);
    return r ? r->minimum_effect : -1.0;
  };
  EXPECT_EQ(effect("def", "H200", "cupti"), 0.02);
  EXPECT_EQ(effect("def", "H200", "events"), 0.04);
  EXPECT_EQ(effect("def", "B200", "cupti"), 0.05);
  EXPECT_EQ(effect("other", "H200", "cupti"), 0.06);
  EXPECT_EQ(effect("def", "A100", "cupti"), -1.0);
  EXPECT_EQ(effect("def", "H200", "wall"), -1.0);
}

TEST_F(GateRecords, CheckConstraintsRefuseUnknownValues) {
  DecisionRecord maybe = decision(a, "maybe", "2026-02-01T00:00:00.000Z");
  std::string message = error_of([&] { store.put_decision(maybe); });
  EXPECT_THAT(message, HasSubstr("CHECK constraint failed"));
  GateRecord g = gate_record("nope", "2026-02-01T00:00:00.000Z");
  EXPECT_THAT(error_of([&] { store.put_gate(g); }), HasSubstr("CHECK constraint failed"));
  g = gate_record("gate", "2026-02-01T00:00:00.000Z");
  g.verdict = "draw";
  EXPECT_THAT(error_of([&] { store.put_gate(g); }), HasSubstr("CHECK constraint failed"));
  EXPECT_EQ(count("decisions"), 0);
  EXPECT_EQ(count("gates"), 0);
  // The same records with allowed values are stored.
  maybe.decision = "archive";
  store.put_decision(maybe);
  g.verdict = "loss";
  store.put_gate(g);
  EXPECT_EQ(count("decisions"), 1);
  EXPECT_EQ(count("gates"), 1);
}

TEST(GateRecordsSchema, VersionOneDatabaseMigratesKeepingItsRows) {
  test::ScopedTempDir dir;
  const StoreLocation where{dir.path()};
  ASSERT_GE(newest_schema_version(), 2);
  {
    SqliteDb db(where.database());
    EXPECT_EQ(migrate_schema(db, schema_migrations(), 1), 1);
    db.exec(
        "INSERT INTO candidates (hash, name, definition, created_at) "
        "VALUES ('abc', 'old', 'def', '2026-01-01T00:00:00.000Z')");
    EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'decisions'"), 0);
  }
  ArtifactStore store(where);
  EXPECT_EQ(store.schema_version(), newest_schema_version());
  EXPECT_EQ(database_schema_version(store.db()), newest_schema_version());
  ASSERT_TRUE(store.candidate("abc"));
  EXPECT_EQ(store.candidate("abc")->name, "old");
  for (const char* table : {"noise_floors", "gates", "decisions"})
    EXPECT_EQ(store.db().query_int(std::string("SELECT count(*) FROM sqlite_master WHERE type = "
                                               "'table' AND name = '") +
                                   table + "'"),
              1)
        << table;

  DecisionRecord d;
  d.definition = "def";
  d.candidate = "abc";
  d.decision = "promote";
  d.reason = "first";
  store.put_decision(d);
  ASSERT_TRUE(store.retained("def"));
  EXPECT_EQ(store.retained("def")->candidate, "abc");
}

// --- bundles -------------------------------------------------------------------------------------

std::string export_text(ArtifactStore& store, const BundleExportOptions& o = {}) {
  std::ostringstream out;
  export_bundle(store, o, out);
  return out.str();
}

BundleImportStats import_text(ArtifactStore& store, const std::string& text) {
  std::istringstream in(text);
  return import_bundle(store, in, "test.khb");
}

TEST_F(GateRecords, BundlesCarryTheRecordsAndWhatTheyReference) {
  const NoiseFloorRecord floor = noise_floor("NVIDIA H200", "cupti", "2026-02-01T00:00:00.000Z");
  store.put_noise_floor(floor);
  GateRecord g = gate_record("full", "2026-02-02T00:00:00.000Z");
  g.environment = "env";
  store.put_gate(g);
  store.put_decision(decision(a, "promote", "2026-01-15T00:00:00.000Z"));
  store.put_decision(decision(b, "promote", "2026-02-03T00:00:00.000Z", a.hash));
  // Same time, put later: must stay the retained one in the importing store too.
  const CandidateRecord c = candidate(store, "third", "2026-01-03T00:00:00.000Z");
  store.put_decision(decision(c, "promote", "2026-02-03T00:00:00.000Z", a.hash));

  const std::string text = export_text(store);
  EXPECT_EQ(Json::parse(text.substr(0, text.find('\n'))).at("schema"), newest_schema_version());
  // The gate records come after the evaluations, in dependency order.
  EXPECT_LT(text.find("\"t\":\"candidates\""), text.find("\"t\":\"noise_floors\""));
  EXPECT_LT(text.find("\"t\":\"noise_floors\""), text.find("\"t\":\"gates\""));
  EXPECT_LT(text.find("\"t\":\"gates\""), text.find("\"t\":\"decisions\""));

  ArtifactStore home(StoreLocation{dir.path() / "home"});
  const BundleImportStats stats = import_text(home, text);
  EXPECT_EQ(stats.tables.at("noise_floors").added, 1);
  EXPECT_EQ(stats.tables.at("gates").added, 1);
  EXPECT_EQ(stats.tables.at("decisions").added, 3);
  expect_same(*home.latest_noise_floor("def", "NVIDIA H200", "cupti"),
              *store.latest_noise_floor("def", "NVIDIA H200", "cupti"));
  const auto gates = home.gates("def");
  ASSERT_EQ(gates.size(), 1u);
  expect_same(gates[0], store.gates("def").at(0));
  EXPECT_TRUE(std::isnan(gates[0].lo));
  EXPECT_TRUE(std::isinf(gates[0].hi));
  const auto decisions = home.decisions();
  const auto expected = store.decisions();
  ASSERT_EQ(decisions.size(), expected.size());
  for (std::size_t i = 0; i < decisions.size(); ++i) expect_same(decisions[i], expected[i]);
  ASSERT_TRUE(home.retained("def"));
  EXPECT_EQ(home.retained("def")->candidate, c.hash);
  ASSERT_TRUE(home.candidate(b.hash));
  EXPECT_EQ(home.blob(home.candidate(b.hash)->sources.at("k.cu")), "source of challenger");
  EXPECT_TRUE(home.environment("env"));
  EXPECT_TRUE(home.definition_json("def"));
  EXPECT_EQ(import_text(home, text).rows_added(), 0) << "importing twice adds nothing";
}

TEST_F(GateRecords, BundleSelectionOfGateRecords) {
  // An old decision between old candidates, and a new gate whose baseline is old.
  const CandidateRecord old_one = candidate(store, "old", "2000-01-01T00:00:00.000Z");
  const CandidateRecord older = candidate(store, "older", "2000-01-01T00:00:00.000Z");
  store.put_decision(decision(old_one, "reject", "2000-01-02T00:00:00.000Z", older.hash));
  GateRecord g = gate_record("gate", "2999-01-01T00:00:00.000Z");
  g.candidate_a = old_one.hash;
  g.environment = "env";
  store.put_gate(g);
  SweepRecord s;
  s.id = "sweep";
  s.plan_key = "plan";
  s.definition = "def";
  s.candidates = {b.hash};
  s.created_at = "2999-01-01T00:00:00.000Z";
  store.put_sweep(s);

  ArtifactStore since(StoreLocation{dir.path() / "since"});
  import_text(since, export_text(store, {"2999-01-01", {}}));
  EXPECT_EQ(since.gates().size(), 1u);
  EXPECT_TRUE(since.decisions().empty()) << "the old decision is before `since`";
  ASSERT_TRUE(since.candidate(old_one.hash)) << "referenced by the new gate, however old";
  EXPECT_EQ(since.blob(since.candidate(old_one.hash)->manifest_blob), "manifest of old");
  EXPECT_TRUE(since.candidate(b.hash));
  EXPECT_FALSE(since.candidate(older.hash));
  EXPECT_TRUE(since.environment("env"));

  ArtifactStore swept(StoreLocation{dir.path() / "swept"});
  import_text(swept, export_text(store, {"", {"sweep"}}));
  EXPECT_TRUE(swept.sweep("sweep"));
  EXPECT_TRUE(swept.gates().empty()) << "a sweep selection carries no gate records";
  EXPECT_TRUE(swept.decisions().empty());
  EXPECT_EQ(swept.db().query_int("SELECT count(*) FROM noise_floors"), 0);
}

TEST(GateRecordsBundle, VersionOneBundleImportsIntoAVersionTwoStore) {
  // A bundle as a schema-1 kh wrote it: rows of version-1 tables only.
  const std::string blob = "int x;\n";
  const std::string blob_hash = sha256_hex(blob);
  const std::vector<Json> lines = {
      {{"format", "kh-bundle"},
       {"version", 1},
       {"schema", 1},
       {"created_at", "2026-01-01T00:00:00.000Z"},
       {"since", ""},
       {"sweeps", Json::array()}},
      {{"t", "blob"},
       {"h", blob_hash},
       {"created_at", "2026-01-01T00:00:00.000Z"},
       {"b64", "aW50IHg7Cg=="}},
      {{"t", "definitions"},
       {"r", {{"name", "def"}, {"json", "{\"name\":\"def\"}"}, {"created_at", "2026-01-01"}}}},
      {{"t", "candidates"},
       {"r",
        {{"hash", "c1"},
         {"name", "old"},
         {"definition", "def"},
         {"parent", ""},
         {"params", "{}"},
         {"manifest_blob", ""},
         {"created_at", "2026-01-01T00:00:00.000Z"}}}},
      {{"t", "candidate_sources"},
       {"r", {{"candidate", "c1"}, {"path", "k.cu"}, {"blob", blob_hash}}}},
  };
  std::string text;
  for (const Json& line : lines) text += line.dump() + "\n";

  test::ScopedTempDir dir;
  ArtifactStore store(StoreLocation{dir.path()});
  ASSERT_EQ(store.schema_version(), newest_schema_version());
  const BundleImportStats stats = import_text(store, text);
  EXPECT_EQ(stats.blobs_added, 1);
  EXPECT_EQ(stats.rows_added(), 3);
  ASSERT_TRUE(store.candidate("c1"));
  EXPECT_EQ(store.blob(store.candidate("c1")->sources.at("k.cu")), blob);
  // And the imported candidate can be decided on.
  DecisionRecord d;
  d.definition = "def";
  d.candidate = "c1";
  d.decision = "promote";
  store.put_decision(d);
  EXPECT_EQ(store.retained("def")->candidate, "c1");
}

}  // namespace
}  // namespace kh
