// Bundles: export then import into an empty store reproduces every row, importing twice adds
// nothing, `since` and sweep filters keep what exported rows reference, tampered blobs and newer
// formats are refused without a half-done import, memory/ bundles are imported once, and a full
// sweep's samples stay a few MiB.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/artifact_store.h"
#include "kh/store/bundle.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::vector<std::string> kTables = {
    "blobs",        "definitions", "workloads", "candidates",  "candidate_sources", "builds",
    "environments", "ceilings",    "sweeps",    "sweep_items", "evaluations"};

// Every row of a table as text, in a fixed order: what "identical rows" compares.
std::vector<std::string> dump(ArtifactStore& store, const std::string& table) {
  Statement s(store.db(), "SELECT * FROM " + table + " ORDER BY 1, 2");
  std::vector<std::string> rows;
  while (s.step()) {
    std::string row;
    for (int c = 0; c < s.column_count(); ++c) {
      row += s.column_name(c) + "=";
      switch (s.column_type(c)) {
        case SQLITE_NULL:
          row += "NULL";
          break;
        case SQLITE_FLOAT:
          row += fmt::format("{}", s.real(c));  // shortest round-trip form
          break;
        default:
          row += s.text(c);
      }
      row += "|";
    }
    rows.push_back(row);
  }
  return rows;
}

std::map<std::string, std::vector<std::string>> dump_all(ArtifactStore& store) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& t : kTables) out[t] = dump(store, t);
  return out;
}

std::string export_text(ArtifactStore& store, const BundleExportOptions& o = {}) {
  std::ostringstream out;
  export_bundle(store, o, out);
  return out.str();
}

BundleImportStats import_text(ArtifactStore& store, const std::string& text,
                              const std::string& name = "test.khb") {
  std::istringstream in(text);
  return import_bundle(store, in, name);
}

using test::error_of;

// An evaluations record line: `row` with one field set to `value`.
std::string changed(Json row, const std::string& field, const Json& value) {
  row[field] = value;
  return Json{{"t", "evaluations"}, {"r", row}}.dump();
}

class Bundles : public ::testing::Test {
 protected:
  Bundles() : home(StoreLocation{dir.path() / "home"}), away(StoreLocation{dir.path() / "away"}) {}

  CandidateRecord candidate(const std::string& name, const std::string& created_at) {
    CandidateRecord c;
    c.name = name;
    c.definition = "def";
    c.params = {{"B", "64"}};
    c.manifest_blob = away.put_blob("manifest of " + name);
    c.sources = {{"k.cu", away.put_blob("source of " + name)}};
    c.hash = sha256_hex(name);
    c.created_at = created_at;
    away.put_candidate(c);
    return c;
  }

  EvaluationRecord evaluation(const CandidateRecord& c, const std::string& workload,
                              const std::string& status, const std::string& created_at) {
    EvaluationRecord e;
    e.candidate = c.hash;
    e.definition = "def";
    e.workload = workload;
    e.status = status;
    e.max_relative_error = std::numeric_limits<double>::infinity();
    e.matched_ratio = std::nan("");
    e.options = {{"trials", 3}};
    e.summary = summarize_samples({{1e-5, 2e-5}, {3e-5}}, 0);
    e.samples = {{"seconds", {{1e-5, 2e-5}, {3e-5}}}};
    e.fraction_of_floor = 0.25;
    e.environment = "env";
    e.created_at = created_at;
    return e;
  }

  // A small but complete store: every table has rows, one evaluation is old, one new.
  void populate() {
    away.put_definition("def", {{"name", "def"}});
    away.put_workload("def", "w1", {{"uuid", "w1"}});
    away.put_workload("def", "w2", {{"uuid", "w2"}});
    old_candidate = candidate("old", "2000-01-01T00:00:00.000Z");
    new_candidate = candidate("new", "2999-01-01T00:00:00.000Z");
    unrelated = candidate("unrelated", "2000-01-02T00:00:00.000Z");
    away.put_build({"", new_candidate.hash, "key", true, false, away.put_blob("log"), 1.5,
                    "2999-01-01T00:00:01.000Z"});
    away.put_environment({"env", {{"gpu", "H200"}}});
    away.put_ceilings({"", "H200", {{"flops", 1e15}}, "2000-01-01T00:00:00.000Z"});
    SweepRecord s;
    s.id = "sweep-new";
    s.plan_key = "plan";
    s.definition = "def";
    s.candidates = {old_candidate.hash};
    s.created_at = "2999-01-01T00:00:02.000Z";
    away.put_sweep(s);
    const SweepItem item{s.id, 0, old_candidate.hash, "w2", SweepItemState::kPending, 0, false, ""};
    away.put_sweep_item(item);
    away.record_attempt(
        item, evaluation(old_candidate, "w2", "RUNTIME_ERROR", "2999-01-01T00:00:03.000Z"));
    away.record_attempt(item,
                        evaluation(old_candidate, "w2", "PASSED", "2999-01-01T00:00:04.000Z"));
    away.finish_sweep(s.id, "2999-01-01T00:00:05.000Z");
    away.put_evaluation(evaluation(old_candidate, "w1", "PASSED", "2000-01-03T00:00:00.000Z"));
  }

  test::ScopedTempDir dir;
  ArtifactStore home, away;
  CandidateRecord old_candidate, new_candidate, unrelated;
};

TEST_F(Bundles, ExportImportReproducesEveryRow) {
  populate();
  const std::string text = export_text(away);
  const Json header = Json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(header.at("format"), "kh-bundle");
  EXPECT_EQ(header.at("version"), 1);
  EXPECT_EQ(header.at("schema"), away.schema_version());

  const BundleImportStats stats = import_text(home, text);
  const auto expected = dump_all(away);
  EXPECT_EQ(dump_all(home), expected);
  for (const auto& [table, rows] : expected) {
    if (table == "blobs") continue;
    EXPECT_EQ(stats.tables.count(table) ? stats.tables.at(table).added : 0,
              static_cast<int>(rows.size()))
        << table;
  }
  EXPECT_EQ(stats.blobs_added, static_cast<int>(expected.at("blobs").size()));
  EXPECT_EQ(home.blob(old_candidate.sources.at("k.cu")), "source of old");
  const auto item = home.sweep_items("sweep-new").at(0);
  EXPECT_TRUE(item.flaky);
  EXPECT_EQ(home.sweep("sweep-new")->finished_at, "2999-01-01T00:00:05.000Z");
  const auto evals = home.evaluations_of_sweep("sweep-new");
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_TRUE(std::isinf(evals[0].max_relative_error));
  EXPECT_TRUE(std::isnan(evals[0].matched_ratio));
  EXPECT_EQ(evals[0].id, evaluation_id(evals[0]));
}

TEST_F(Bundles, ImportingTwiceChangesNothing) {
  populate();
  const std::string text = export_text(away);
  import_text(home, text);
  const auto first = dump_all(home);
  const BundleImportStats again = import_text(home, text);
  EXPECT_EQ(again.rows_added(), 0);
  EXPECT_EQ(again.blobs_added, 0);
  EXPECT_GT(again.tables.at("evaluations").seen, 0);
  EXPECT_EQ(dump_all(home), first);
  // And back the other way: the source store already has it all.
  EXPECT_EQ(import_text(away, export_text(home)).rows_added(), 0);
}

TEST_F(Bundles, SweepItemsAndFinishedSweepsMergeOnImport) {
  populate();
  // Home knows the sweep as unfinished: the import brings the finishing time.
  SweepRecord unfinished = *away.sweep("sweep-new");
  unfinished.finished_at = "";
  home.put_sweep(unfinished);
  const BundleImportStats stats = import_text(home, export_text(away));
  EXPECT_EQ(stats.tables.at("sweeps").added, 1);
  EXPECT_EQ(home.sweep("sweep-new")->finished_at, "2999-01-01T00:00:05.000Z");
  // At home the item gets further along (a third attempt): importing the older copy keeps it.
  SweepItem item = home.sweep_items("sweep-new").at(0);
  item.attempts = 3;
  item.state = SweepItemState::kFailed;
  home.put_sweep_item(item);
  import_text(home, export_text(away));
  EXPECT_EQ(home.sweep_items("sweep-new").at(0).attempts, 3) << "the furthest copy is kept";
}

TEST_F(Bundles, SinceKeepsWhatNewRowsReference) {
  populate();
  const std::string text = export_text(away, {"2999-01-01", {}});
  import_text(home, text);
  // The new evaluations and sweep, the old candidate they use (with its blobs), the environment.
  EXPECT_EQ(home.evaluations_of_sweep("sweep-new").size(), 2u);
  EXPECT_TRUE(home.sweep("sweep-new"));
  ASSERT_TRUE(home.candidate(old_candidate.hash));
  EXPECT_EQ(home.blob(old_candidate.manifest_blob), "manifest of old");
  EXPECT_TRUE(home.environment("env"));
  EXPECT_TRUE(home.workload_json("w2"));
  EXPECT_TRUE(home.definition_json("def"));
  EXPECT_EQ(home.builds(new_candidate.hash).size(), 1u);
  // Not the old evaluation, the old ceilings or the candidate nothing new references.
  EXPECT_EQ(home.evaluations_of_candidate(old_candidate.hash).size(), 2u);
  EXPECT_FALSE(home.latest_ceilings("H200"));
  EXPECT_FALSE(home.candidate(unrelated.hash));
  EXPECT_FALSE(home.workload_json("w1"));

  EXPECT_THAT(error_of([&] { export_text(away, {"yesterday", {}}); }), HasSubstr("yesterday"));
}

TEST_F(Bundles, SweepFilterExportsThatSweepOnly) {
  populate();
  import_text(home, export_text(away, {"", {"sweep-new"}}));
  EXPECT_EQ(home.evaluations_of_candidate(old_candidate.hash).size(), 2u);
  EXPECT_EQ(home.sweep_items("sweep-new").size(), 1u);
  EXPECT_TRUE(home.candidate(old_candidate.hash));
  EXPECT_FALSE(home.candidate(new_candidate.hash));
  EXPECT_FALSE(home.latest_ceilings("H200"));
  EXPECT_THAT(error_of([&] { export_text(away, {"", {"no-sweep"}}); }), HasSubstr("no-sweep"));
}

TEST_F(Bundles, TamperedBlobIsRejectedAndNothingIsImported) {
  populate();
  std::string text = export_text(away);
  // Change the bytes of the first blob but keep its claimed hash.
  const std::string marker = "\"b64\":\"";
  const auto at = text.find(marker);
  ASSERT_NE(at, std::string::npos);
  const auto b64 = at + marker.size();
  text[b64] = text[b64] == 'A' ? 'B' : 'A';
  const std::string message = error_of([&] { import_text(home, text, "tampered.khb"); });
  EXPECT_THAT(message, HasSubstr("tampered.khb:2"));
  EXPECT_THAT(message, HasSubstr("tampered"));
  for (const auto& [table, rows] : dump_all(home)) EXPECT_TRUE(rows.empty()) << table;

  // A bad row late in the bundle also leaves nothing behind.
  const std::string good = export_text(away);
  const std::string lines = std::to_string(std::count(good.begin(), good.end(), '\n') + 1);
  Json row = Json::parse(good.substr(good.rfind("{\"t\":\"evaluations\"")))["r"];
  row["id"] = "another";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"t":"evaluations","r":{"id":"x","no_such_column":1}})", "no_such_column"},
      {changed(row, "status", nullptr), "NOT NULL"},
      {changed(row, "attempt", "one"), "attempt"},
      {changed(row, "candidate", "nope"), "FOREIGN KEY"},
      {R"({"t":"imported_bundles","r":{}})", "unknown record type"},
  };
  for (const auto& [line, why] : bad) {
    const std::string message = error_of([&] { import_text(home, good + line + "\n", "bad.khb"); });
    EXPECT_THAT(message, HasSubstr("bad.khb:" + lines)) << line;
    EXPECT_THAT(message, HasSubstr(why)) << line;
    for (const auto& [table, rows] : dump_all(home)) EXPECT_TRUE(rows.empty()) << table;
  }
}

TEST_F(Bundles, NewerOrForeignFormatsAreRefused) {
  const std::string v99 =
      R"({"format":"kh-bundle","version":99,"schema":1,"created_at":"2026-01-01T00:00:00.000Z"})"
      "\n";
  std::string message = error_of([&] { import_text(home, v99, "future.khb"); });
  EXPECT_THAT(message, HasSubstr("future.khb"));
  EXPECT_THAT(message, HasSubstr("version 99"));
  message = error_of([&] { import_text(home, "{\"format\":\"zip\"}\n", "other.khb"); });
  EXPECT_THAT(message, HasSubstr("other.khb"));
  EXPECT_THAT(message, HasSubstr("not a kh bundle"));
  EXPECT_THAT(error_of([&] { import_text(home, "", "empty.khb"); }), HasSubstr("empty.khb"));
  const std::string newer_schema =
      R"({"format":"kh-bundle","version":1,"schema":999,"created_at":"x"})"
      "\n";
  EXPECT_THAT(error_of([&] { import_text(home, newer_schema); }), HasSubstr("schema 999"));
}

TEST_F(Bundles, MemoryDirIsImportedOnce) {
  populate();
  const fs::path memory = dir.path() / "memory";
  EXPECT_EQ(import_memory_dir(home, memory), 0) << "no folder: nothing to import";
  test::write_file(memory / "a.khb", export_text(away, {"2999-01-01", {}}));
  test::write_file(memory / "notes.txt", "not a bundle");
  EXPECT_EQ(import_memory_dir(home, memory), 1);
  EXPECT_EQ(import_memory_dir(home, memory), 0);
  fs::copy_file(memory / "a.khb", memory / "copy.khb");  // same content: already imported
  EXPECT_EQ(import_memory_dir(home, memory), 0);
  test::write_file(memory / "b.khb", export_text(away));
  EXPECT_EQ(import_memory_dir(home, memory), 1);
  EXPECT_EQ(dump_all(home), dump_all(away));
  EXPECT_EQ(home.db().query_int("SELECT count(*) FROM imported_bundles"), 2);
}

TEST_F(Bundles, AFullSweepStaysAFewMiB) {
  // ~330 workloads x 150 samples (3 trials of 50) with clocks and throttle reasons.
  const CandidateRecord c = candidate("big", "2026-01-01T00:00:00.000Z");
  away.put_environment({"env", {{"gpu", "H200"}}});
  Transaction t(away.db());
  for (int w = 0; w < 330; ++w) {
    EvaluationRecord e = evaluation(c, "w" + std::to_string(w), "PASSED", utc_timestamp());
    Json seconds = Json::array(), clocks = Json::array(), reasons = Json::array();
    std::vector<std::vector<double>> trials(3);
    for (int k = 0; k < 3; ++k) {
      Json s = Json::array(), m = Json::array(), r = Json::array();
      for (int i = 0; i < 50; ++i) {
        const double x = 1.234567891234e-5 * (1 + 0.001 * ((w * 7 + k * 13 + i * 17) % 97));
        s.push_back(x);
        trials[k].push_back(x);
        m.push_back(1980);
        r.push_back(0);
      }
      seconds.push_back(s);
      clocks.push_back(m);
      reasons.push_back(r);
    }
    e.samples = {{"seconds", seconds}, {"sm_clock_mhz", clocks}, {"throttle_reasons", reasons}};
    e.summary = summarize_samples(trials, 0);
    away.put_evaluation(e);
  }
  t.commit();
  const std::string text = export_text(away);
  EXPECT_LT(text.size(), 4u << 20) << "bundle of a full sweep: " << text.size() << " bytes";
  EXPECT_EQ(import_text(home, text).tables.at("evaluations").added, 330);
}

}  // namespace
}  // namespace kh
