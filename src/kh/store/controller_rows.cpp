#include "kh/store/controller_rows.h"

#include "kh/core/error.h"
#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh::rows {

const char* const kPendingPromotionColumns =
    "id, definition, candidate, against, reason, evidence, requested_by, created_at";
const char* const kApprovalColumns = "pending, decision, approved, decided_by, note, created_at";
const char* const kNoteColumns = "id, definition, text, reference, author, created_at";

PendingPromotionRecord read_pending_promotion(const SqliteDb& db, const Statement& s) {
  PendingPromotionRecord r;
  r.id = s.text(0);
  r.definition = s.text(1);
  r.candidate = s.text(2);
  r.against = s.text(3);  // NULL reads as ""
  r.reason = s.text(4);
  r.evidence = stored_json(db, s, 5, "pending_promotions." + r.id + ".evidence");
  r.requested_by = s.text(6);
  r.created_at = s.text(7);
  return r;
}

ApprovalRecord read_approval(const Statement& s) {
  ApprovalRecord r;
  r.pending = s.text(0);
  r.decision = s.text(1);
  r.approved = s.int64(2) != 0;
  r.decided_by = s.text(3);
  r.note = s.text(4);
  r.created_at = s.text(5);
  return r;
}

NoteRecord read_note(const Statement& s) {
  NoteRecord r;
  r.id = s.text(0);
  r.definition = s.text(1);
  r.text = s.text(2);
  r.reference = s.text(3);
  r.author = s.text(4);
  r.created_at = s.text(5);
  return r;
}

std::string insert_pending_promotion(SqliteDb& db, PendingPromotionRecord r) {
  for (std::string* text : {&r.definition, &r.reason, &r.requested_by}) *text = valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = pending_promotion_id(r);
  Statement s(db, std::string("INSERT INTO pending_promotions (") + kPendingPromotionColumns +
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING");
  s.bind(1, r.id)
      .bind(2, r.definition)
      .bind(3, r.candidate)
      .bind_text_or_null(4, r.against)
      .bind(5, r.reason)
      .bind(6, json_text(r.evidence))
      .bind(7, r.requested_by)
      .bind(8, r.created_at);
  s.run();
  return r.id;
}

bool insert_approval(SqliteDb& db, ApprovalRecord r) {
  for (std::string* text : {&r.decided_by, &r.note}) *text = valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  Statement s(db, std::string("INSERT INTO approvals (") + kApprovalColumns +
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING");
  s.bind(1, r.pending)
      .bind(2, r.decision)
      .bind(3, r.approved ? 1 : 0)
      .bind(4, r.decided_by)
      .bind(5, r.note)
      .bind(6, r.created_at);
  s.run();
  return db.changes() > 0;
}

std::string insert_note(SqliteDb& db, NoteRecord r) {
  for (std::string* text : {&r.definition, &r.text, &r.reference, &r.author})
    *text = valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = note_id(r);
  Statement s(db, std::string("INSERT INTO reconnaissance_notes (") + kNoteColumns +
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING");
  s.bind(1, r.id)
      .bind(2, r.definition)
      .bind(3, r.text)
      .bind(4, r.reference)
      .bind(5, r.author)
      .bind(6, r.created_at);
  s.run();
  return r.id;
}

}  // namespace kh::rows
