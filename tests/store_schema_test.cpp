// The store's schema: a fresh store gets the newest version, reopening changes nothing, older
// databases are migrated step by step, a newer one is refused without a byte changed, foreign
// keys hold, and the transaction guard nests as savepoints.
#include <functional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/store/artifact_store.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using test::error_of;

std::int64_t count(SqliteDb& db, const std::string& sql) {
  return db.query_int(sql);
}

std::string schema_text(SqliteDb& db) {
  Statement s(db, "SELECT type, name, sql FROM sqlite_master ORDER BY name");
  std::string out;
  while (s.step()) out += s.text(0) + " " + s.text(1) + " " + s.text(2) + "\n";
  return out;
}

TEST(StoreSchema, FreshStoreGetsTheNewestVersion) {
  test::ScopedTempDir dir;
  ArtifactStore store(StoreLocation{dir.path()});
  EXPECT_EQ(store.schema_version(), newest_schema_version());
  EXPECT_EQ(database_schema_version(store.db()), newest_schema_version());
  EXPECT_EQ(count(store.db(), "PRAGMA foreign_keys"), 1);
  Statement mode(store.db(), "PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.text(0), "wal");
  for (const char* table :
       {"blobs", "definitions", "workloads", "candidates", "candidate_sources", "builds",
        "environments", "ceilings", "evaluations", "sweeps", "sweep_items", "imported_bundles"})
    EXPECT_EQ(
        count(store.db(), std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                      "name = '") +
                              table + "'"),
        1)
        << table;
}

TEST(StoreSchema, ReopeningIsANoOp) {
  test::ScopedTempDir dir;
  std::string before;
  {
    ArtifactStore store(StoreLocation{dir.path()});
    store.put_definition("d", {{"name", "d"}});
    before = schema_text(store.db());
  }
  ArtifactStore store(StoreLocation{dir.path()});
  EXPECT_EQ(store.schema_version(), newest_schema_version());
  EXPECT_EQ(schema_text(store.db()), before);
  EXPECT_TRUE(store.definition_json("d"));
}

TEST(StoreSchema, OlderDatabasesAreMigrated) {
  test::ScopedTempDir dir;
  const StoreLocation where{dir.path()};
  {
    // A database at version 0 holding something of its own, then brought to version 1 only.
    SqliteDb db(where.database());
    db.exec("CREATE TABLE notes (text TEXT)");
    EXPECT_EQ(database_schema_version(db), 0);
    EXPECT_EQ(migrate_schema(db, schema_migrations(), 1), 1);
    db.exec(
        "INSERT INTO candidates (hash, name, definition, created_at) "
        "VALUES ('abc', 'old', 'd', '2026-01-01T00:00:00.000Z')");
  }
  ArtifactStore store(where);
  EXPECT_EQ(store.schema_version(), newest_schema_version());
  ASSERT_TRUE(store.candidate("abc"));
  EXPECT_EQ(store.candidate("abc")->name, "old");
  EXPECT_EQ(count(store.db(), "SELECT count(*) FROM notes"), 0);
}

TEST(StoreSchema, AFurtherMigrationIsOneMoreEntry) {
  test::ScopedTempDir dir;
  const StoreLocation where{dir.path()};
  const int next = newest_schema_version() + 1;
  std::vector<Migration> migrations = schema_migrations();
  migrations.push_back(
      {next, "candidate notes", "ALTER TABLE candidates ADD COLUMN note TEXT NOT NULL DEFAULT ''"});
  {
    ArtifactStore store(where);  // at the newest version of this binary
  }
  {
    SqliteDb db(where.database());
    EXPECT_EQ(migrate_schema(db, migrations, next), next);
    EXPECT_EQ(count(db, "SELECT count(*) FROM pragma_table_info('candidates') WHERE name = 'note'"),
              1);
  }
  // The migrated database is now newer than this binary knows: refused.
  EXPECT_THAT(error_of([&] { ArtifactStore store(where); }), HasSubstr("newer kh"));

  std::vector<Migration> gap = schema_migrations();
  gap.push_back({next + 1, "gap", "SELECT 1"});
  SqliteDb other(dir.path() / "other.db");
  EXPECT_THAT(error_of([&] { migrate_schema(other, gap, next + 1); }), HasSubstr("out of order"));
}

TEST(StoreSchema, NewerDatabaseIsRefusedAndLeftUnchanged) {
  test::ScopedTempDir dir;
  const StoreLocation where{dir.path()};
  const int newer = newest_schema_version() + 5;
  {
    ArtifactStore store(where);
    store.put_definition("d", {{"name", "d"}});
    store.db().exec("PRAGMA user_version = " + std::to_string(newer));
  }
  ASSERT_FALSE(fs::exists(where.database().string() + "-wal")) << "checkpointed on close";
  const std::string bytes = read_text_file(where.database());
  const std::string message = error_of([&] { ArtifactStore store(where); });
  EXPECT_THAT(message, HasSubstr(where.database().string()));
  EXPECT_THAT(message, HasSubstr("version " + std::to_string(newer)));
  EXPECT_THAT(message, HasSubstr(std::to_string(newest_schema_version())));
  EXPECT_THAT(message, HasSubstr("refusing to open it"));
  EXPECT_EQ(read_text_file(where.database()), bytes);
}

TEST(StoreSchema, ForeignKeysAreEnforced) {
  test::ScopedTempDir dir;
  ArtifactStore store(StoreLocation{dir.path()});
  EvaluationRecord e;
  e.candidate = "no-such-candidate";
  e.workload = "w";
  e.status = "PASSED";
  EXPECT_THAT(error_of([&] { store.put_evaluation(e); }), HasSubstr("FOREIGN KEY"));

  CandidateRecord c;
  c.hash = "c1";
  c.name = "c";
  c.definition = "d";
  store.put_candidate(c);
  e.candidate = "c1";
  e.environment = "no-such-environment";
  EXPECT_THAT(error_of([&] { store.put_evaluation(e); }), HasSubstr("FOREIGN KEY"));
  e.environment = "";
  store.put_evaluation(e);
  EXPECT_EQ(store.evaluations_of_candidate("c1").size(), 1u);

  EXPECT_THAT(error_of([&] {
                store.put_sweep_item(
                    {"no-such-sweep", 0, "c1", "w", SweepItemState::kPending, 0, false, ""});
              }),
              HasSubstr("FOREIGN KEY"));
  BuildRecord b;
  b.candidate = "nope";
  EXPECT_THAT(error_of([&] { store.put_build(b); }), HasSubstr("FOREIGN KEY"));
}

TEST(SqliteDb, TransactionsRollBackAndNestAsSavepoints) {
  test::ScopedTempDir dir;
  SqliteDb db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (x INTEGER)");
  {
    Transaction t(db);
    db.exec("INSERT INTO t VALUES (1)");
  }  // not committed: rolled back
  EXPECT_EQ(count(db, "SELECT count(*) FROM t"), 0);
  {
    Transaction outer(db);
    db.exec("INSERT INTO t VALUES (1)");
    {
      Transaction inner(db);
      db.exec("INSERT INTO t VALUES (2)");
    }  // the inner part only is undone
    {
      Transaction inner(db);
      db.exec("INSERT INTO t VALUES (3)");
      inner.commit();
    }
    outer.commit();
  }
  EXPECT_EQ(count(db, "SELECT sum(x) FROM t"), 4);
  EXPECT_FALSE(db.in_transaction());
  const std::string message = error_of([&] { db.exec("SELECT * FROM missing"); });
  EXPECT_THAT(message, HasSubstr("t.db"));
  EXPECT_THAT(message, HasSubstr("no such table: missing"));
  EXPECT_THAT(message, HasSubstr("SELECT * FROM missing"));
}

}  // namespace
}  // namespace kh
