// How the records of schema version 3 (records.h PendingPromotionRecord, ApprovalRecord,
// NoteRecord) map onto their tables: the column lists, reading a row into a record, inserting a
// record. Only the artifact store uses it (controller_store.cpp).
#pragma once

#include <string>

#include "kh/store/records.h"

namespace kh {

class SqliteDb;
class Statement;

namespace rows {

// Column lists in the order the read_* functions expect them.
extern const char* const kPendingPromotionColumns;
extern const char* const kApprovalColumns;
extern const char* const kNoteColumns;

PendingPromotionRecord read_pending_promotion(const SqliteDb& db, const Statement& s);
ApprovalRecord read_approval(const Statement& s);
NoteRecord read_note(const Statement& s);

// Each inserts the record unless its identity is stored already, after replacing invalid UTF-8 in
// its text and filling created_at, then id, when empty; returns the identity. insert_approval
// returns whether a row was inserted.
std::string insert_pending_promotion(SqliteDb& db, PendingPromotionRecord r);
bool insert_approval(SqliteDb& db, ApprovalRecord r);
std::string insert_note(SqliteDb& db, NoteRecord r);

}  // namespace rows
}  // namespace kh
