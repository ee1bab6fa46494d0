// The artifact store's schema, versioned by an ordered list of migrations. The version lives in
// the database's PRAGMA user_version: migration N takes a database from version N-1 to N, and a
// new layout is one more entry at the end of the list (never an edit of an old one, which
// databases in the wild have already applied).
#pragma once

#include <string>
#include <vector>

namespace kh {

class SqliteDb;

struct Migration {
  int version;          // the user_version after it: 1, 2, ...
  std::string summary;  // what it changes, for messages
  std::string sql;      // one or more statements, run in one transaction
};

/// The migrations of this binary, in order (versions 1, 2, ... without gaps).
const std::vector<Migration>& schema_migrations();
/// The newest version this binary knows (the last migration's).
int newest_schema_version();

/// The database's user_version.
int database_schema_version(SqliteDb& db);

/// Throws, without writing, when the database's version is newer than `newest`: it was written
/// by a newer kh and this one would misread it. Meant as SqliteDb's BeforeWrite check.
void refuse_newer_schema(SqliteDb& db, int newest = newest_schema_version());

/// Applies the migrations the database lacks, up to and including version `target`, one
/// transaction each. Safe when several processes open the same store at once: each migration
/// re-reads the version inside its (exclusive) transaction. Returns the version reached.
int migrate_schema(SqliteDb& db, const std::vector<Migration>& migrations, int target);
inline int migrate_schema(SqliteDb& db) {
  return migrate_schema(db, schema_migrations(), newest_schema_version());
}

}  // namespace kh
