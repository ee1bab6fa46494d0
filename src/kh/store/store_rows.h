// How the records of records.h map onto the store's tables (schema.cpp): the column lists, and
// reading a row into a record or writing a record as a row. Only the artifact store uses it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kh/store/records.h"

namespace kh {

class SqliteDb;
class Statement;

namespace rows {

/// JSON as the store keeps it: compact, invalid UTF-8 (from logs) replaced rather than thrown on.
std::string json_text(const Json& j);
/// Text made valid UTF-8, bad bytes replaced by U+FFFD exactly as json_text would write them.
std::string valid_utf8(const std::string& text);
/// A JSON text column parsed; errors name the database and `what` (table.column of which row).
Json stored_json(const SqliteDb& db, const Statement& s, int col, std::string_view what);

// Column lists in the order the read_* functions expect them.
extern const char* const kCandidateColumns;
extern const char* const kEvaluationColumns;
extern const char* const kSweepColumns;
extern const char* const kSweepItemColumns;

CandidateRecord read_candidate(SqliteDb& db, const Statement& s);  // also reads its sources
std::vector<CandidateRecord> read_candidates(SqliteDb& db, Statement& s);
EvaluationRecord read_evaluation(SqliteDb& db, const Statement& s);
std::vector<EvaluationRecord> read_evaluations(SqliteDb& db, Statement& s);
SweepRecord read_sweep(SqliteDb& db, const Statement& s);
std::vector<SweepRecord> read_sweeps(SqliteDb& db, Statement& s);
SweepItem read_sweep_item(const Statement& s);
std::optional<SweepItem> sweep_item(SqliteDb& db, const std::string& sweep, int position);

/// Inserts the evaluation unless its id is stored already (created_at and id filled in when
/// empty; see ArtifactStore::put_evaluation) and returns its id.
std::string insert_evaluation(SqliteDb& db, EvaluationRecord e);
/// Writes the item: unconditionally when `merge_rule` is false, else only over a stored copy
/// that got less far (ArtifactStore::put_sweep_item's rule).
void upsert_sweep_item(SqliteDb& db, const SweepItem& item, bool merge_rule);

}  // namespace rows
}  // namespace kh
