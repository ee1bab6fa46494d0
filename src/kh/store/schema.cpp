#include "kh/store/schema.h"

#include "kh/core/error.h"
#include "kh/store/sqlite_db.h"

namespace kh {
namespace {

// Version 1: everything. Conventions: primary keys are the records' identities (content hashes,
// names, uuids), so the same thing recorded on two machines is one row after an import; STRICT
// tables, so a bundle cannot slip a string into a number column; "" stands for an absent text
// reference except where a foreign key checks it (evaluations.environment is NULL when absent);
// a NULL in a REAL column of a plain double field is NaN (SQLite stores NaN as NULL); JSON values
// are stored as their text; created_at columns hold ISO 8601 UTC, which sorts by time, and are
// kept on every table so a bundle can export what is new since a date.
const char* const kVersion1 = R"sql(
CREATE TABLE blobs (
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE definitions (
  name TEXT PRIMARY KEY,
  json TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE workloads (
  uuid TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  json TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX workloads_by_definition ON workloads(definition);

CREATE TABLE candidates (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  definition TEXT NOT NULL,
  parent TEXT NOT NULL DEFAULT '',
  params TEXT NOT NULL DEFAULT '{}',
  manifest_blob TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX candidates_by_name ON candidates(name, created_at);
CREATE INDEX candidates_by_definition ON candidates(definition, created_at);
CREATE INDEX candidates_by_time ON candidates(created_at);

CREATE TABLE candidate_sources (
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  path TEXT NOT NULL,
  blob TEXT NOT NULL,
  PRIMARY KEY (candidate, path)
) STRICT;

CREATE TABLE builds (
  id TEXT PRIMARY KEY,
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  key TEXT NOT NULL,
  ok INTEGER NOT NULL,
  cached INTEGER NOT NULL,
  log_blob TEXT NOT NULL DEFAULT '',
  seconds REAL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX builds_by_candidate ON builds(candidate);
CREATE INDEX builds_by_time ON builds(created_at);

CREATE TABLE environments (
  hash TEXT PRIMARY KEY,
  json TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE ceilings (
  hash TEXT PRIMARY KEY,
  gpu TEXT NOT NULL,
  json TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX ceilings_by_gpu ON ceilings(gpu, created_at);

CREATE TABLE sweeps (
  id TEXT PRIMARY KEY,
  plan_key TEXT NOT NULL,
  definition TEXT NOT NULL,
  candidates TEXT NOT NULL,
  options TEXT NOT NULL,
  created_at TEXT NOT NULL,
  finished_at TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX sweeps_by_plan ON sweeps(plan_key, created_at);
CREATE INDEX sweeps_by_definition ON sweeps(definition, created_at);
CREATE INDEX sweeps_by_time ON sweeps(created_at);

CREATE TABLE sweep_items (
  sweep TEXT NOT NULL REFERENCES sweeps(id),
  position INTEGER NOT NULL,
  candidate TEXT NOT NULL,
  workload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'passed', 'failed')),
  attempts INTEGER NOT NULL,
  flaky INTEGER NOT NULL,
  last_evaluation TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (sweep, position)
) STRICT;

CREATE TABLE evaluations (
  id TEXT PRIMARY KEY,
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  definition TEXT NOT NULL,
  workload TEXT NOT NULL,
  sweep TEXT NOT NULL DEFAULT '',
  attempt INTEGER NOT NULL,
  status TEXT NOT NULL,
  max_absolute_error REAL,
  max_relative_error REAL,
  matched_ratio REAL,
  message TEXT NOT NULL,
  log_tail TEXT NOT NULL,
  trials INTEGER NOT NULL,
  nondeterministic INTEGER NOT NULL,
  options TEXT NOT NULL,
  timing_method TEXT NOT NULL,
  latency REAL,
  median REAL,
  mean REAL,
  p95 REAL,
  min REAL,
  max REAL,
  n INTEGER,
  throttled INTEGER,
  samples TEXT NOT NULL,
  cost TEXT NOT NULL,
  floor_seconds REAL,
  fraction_of_floor REAL,
  environment TEXT REFERENCES environments(hash),
  reference_latency REAL,
  reference_label TEXT NOT NULL,
  seconds REAL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX evaluations_by_candidate ON evaluations(candidate, created_at);
CREATE INDEX evaluations_by_sweep ON evaluations(sweep, created_at);
CREATE INDEX evaluations_by_time ON evaluations(created_at);

CREATE TABLE imported_bundles (
  hash TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  imported_at TEXT NOT NULL
) STRICT;
)sql";

// Version 2: the records of noise-resistant promotion (issue 6). Version 1's conventions: ids are
// sha256 of the record's canonical JSON without id (records.h), environment and the `against`
// candidate are NULL when absent (a foreign key checks them), NaN is NULL, JSON is text.
const char* const kVersion2 = R"sql(
CREATE TABLE noise_floors (
  id TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  gpu TEXT NOT NULL,
  timing_method TEXT NOT NULL,
  environment TEXT REFERENCES environments(hash),
  minimum_effect REAL,
  distribution_spread REAL,
  median_workload_spread REAL,
  max_workload_spread REAL,
  workload_spread TEXT NOT NULL,
  options TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX noise_floors_by_definition ON noise_floors(definition, created_at);
CREATE INDEX noise_floors_by_time ON noise_floors(created_at);

CREATE TABLE gates (
  id TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  candidate_a TEXT NOT NULL REFERENCES candidates(hash),
  candidate_b TEXT NOT NULL REFERENCES candidates(hash),
  stage TEXT NOT NULL CHECK (stage IN ('aa', 'gate', 'representative', 'full', 'remeasured')),
  gpu TEXT NOT NULL,
  timing_method TEXT NOT NULL,
  environment TEXT REFERENCES environments(hash),
  objective TEXT NOT NULL,
  min_effect REAL,
  estimate REAL,
  lo REAL,
  hi REAL,
  verdict TEXT NOT NULL CHECK (verdict IN ('win', 'tie', 'loss')),
  both_correct INTEGER NOT NULL CHECK (both_correct IN (0, 1)),
  result TEXT NOT NULL,
  samples TEXT NOT NULL,
  options TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX gates_by_definition ON gates(definition, created_at);
CREATE INDEX gates_by_time ON gates(created_at);

CREATE TABLE decisions (
  id TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  against TEXT REFERENCES candidates(hash),
  decision TEXT NOT NULL CHECK (decision IN ('promote', 'archive', 'reject')),
  reason TEXT NOT NULL,
  evidence TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX decisions_by_definition ON decisions(definition, created_at);
CREATE INDEX decisions_by_candidate ON decisions(candidate, created_at);
CREATE INDEX decisions_by_time ON decisions(created_at);
)sql";

// Version 3: the controller's records that involve a person (issue 12). A promotion waiting for
// approval is not a decision: `pending_promotions` keeps what kh promote would have decided, and
// `approvals` the one answer each may get (its primary key is the pending promotion), naming the
// one final decision it wrote to `decisions` (UNIQUE: a decision answers one request). The
// retained candidate stays "the newest promote decision", so a pending promotion is never
// retained. `reconnaissance_notes` are `kh note`'s (named so, not "notes": a database of someone
// else may have a table of that name, and a migration must not collide with it). Versions 1-2's
// conventions hold.
const char* const kVersion3 = R"sql(
CREATE TABLE pending_promotions (
  id TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  against TEXT REFERENCES candidates(hash),
  reason TEXT NOT NULL,
  evidence TEXT NOT NULL,
  requested_by TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX pending_promotions_by_definition ON pending_promotions(definition, created_at);
CREATE INDEX pending_promotions_by_time ON pending_promotions(created_at);

CREATE TABLE approvals (
  pending TEXT PRIMARY KEY REFERENCES pending_promotions(id),
  decision TEXT NOT NULL UNIQUE REFERENCES decisions(id),
  approved INTEGER NOT NULL CHECK (approved IN (0, 1)),
  decided_by TEXT NOT NULL,
  note TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX approvals_by_time ON approvals(created_at);

CREATE TABLE reconnaissance_notes (
  id TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  text TEXT NOT NULL,
  reference TEXT NOT NULL,
  author TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX reconnaissance_notes_by_definition ON reconnaissance_notes(definition, created_at);
CREATE INDEX reconnaissance_notes_by_time ON reconnaissance_notes(created_at);
)sql";

// Version 4: kh profile's calls. The files are blobs; the columns are what listing and choosing
// a profile need (newest of a candidate, its state signature). Versions 1-3's conventions hold.
const char* const kVersion4 = R"sql(
CREATE TABLE profiles (
  id TEXT PRIMARY KEY,
  definition TEXT NOT NULL,
  candidate TEXT NOT NULL REFERENCES candidates(hash),
  workload TEXT NOT NULL,
  gpu TEXT NOT NULL,
  span_seconds REAL NOT NULL,
  bottleneck TEXT NOT NULL,
  signature TEXT NOT NULL,
  profile_blob TEXT NOT NULL REFERENCES blobs(hash),
  ncu_blob TEXT REFERENCES blobs(hash),
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX profiles_by_definition ON profiles(definition, created_at);
CREATE INDEX profiles_by_candidate ON profiles(candidate, created_at);
CREATE INDEX profiles_by_time ON profiles(created_at);
)sql";

}  // namespace

const std::vector<Migration>& schema_migrations() {
  // Append only: version 5 is one more entry here.
  static const std::vector<Migration> kMigrations = {
      {1, "artifact store tables", kVersion1},
      {2, "gate records", kVersion2},
      {3, "pending promotions, approvals and reconnaissance notes", kVersion3},
      {4, "profiles", kVersion4},
  };
  return kMigrations;
}

int newest_schema_version() {
  return schema_migrations().back().version;
}

int database_schema_version(SqliteDb& db) {
  return static_cast<int>(db.query_int("PRAGMA user_version"));
}

void refuse_newer_schema(SqliteDb& db, int newest) {
  const int found = database_schema_version(db);
  if (found > newest)
    fail(
        "{}: store schema version {} was written by a newer kh (this one knows up to version {}); "
        "refusing to open it",
        db.path().string(), found, newest);
}

int migrate_schema(SqliteDb& db, const std::vector<Migration>& migrations, int target) {
  int expected = 1;
  for (const auto& m : migrations)
    if (m.version != expected++)
      fail("store schema: migration list out of order at version {} (expected {})", m.version,
           expected - 1);
  refuse_newer_schema(db, migrations.empty() ? 0 : migrations.back().version);
  for (const auto& m : migrations) {
    if (m.version > target) break;
    if (database_schema_version(db) >= m.version) continue;
    Transaction t(db);
    // Another process may have migrated between the check above and our exclusive lock.
    if (database_schema_version(db) >= m.version) continue;
    try {
      db.exec(m.sql);
    } catch (const Error& e) {
      fail("{}: migrating the store schema to version {} ({}) failed: {}", db.path().string(),
           m.version, m.summary, e.what());
    }
    db.exec("PRAGMA user_version = " + std::to_string(m.version));
    t.commit();
  }
  return database_schema_version(db);
}

}  // namespace kh
