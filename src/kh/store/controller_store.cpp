// ArtifactStore's methods for the records of schema version 3: promotions pending a person's
// approval, the answers they got, reconnaissance notes (artifact_store.h).
#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/store/artifact_store.h"
#include "kh/store/artifact_store_impl.h"
#include "kh/store/controller_rows.h"
#include "kh/store/sqlite_db.h"

namespace kh {

using namespace rows;

std::string ArtifactStore::put_pending_promotion(const PendingPromotionRecord& r) {
  if (r.definition.empty() || r.candidate.empty())
    fail("cannot store a pending promotion without its definition and candidate (empty)");
  return insert_pending_promotion(impl_->db, r);
}

std::optional<PendingPromotionRecord> ArtifactStore::pending_promotion(
    const std::string& id) const {
  Statement s(impl_->db, std::string("SELECT ") + kPendingPromotionColumns +
                             " FROM pending_promotions WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_pending_promotion(impl_->db, s);
}

std::vector<PendingPromotionRecord> ArtifactStore::pending_promotions(const std::string& definition,
                                                                      bool unanswered) const {
  Statement s(impl_->db,
              std::string("SELECT ") + kPendingPromotionColumns +
                  " FROM pending_promotions WHERE (?1 = '' OR definition = ?1) AND (?2 = 0 OR "
                  "NOT EXISTS (SELECT 1 FROM approvals WHERE approvals.pending = "
                  "pending_promotions.id)) ORDER BY created_at, rowid");
  s.bind(1, definition).bind(2, unanswered ? 1 : 0);
  std::vector<PendingPromotionRecord> out;
  while (s.step()) out.push_back(read_pending_promotion(impl_->db, s));
  return out;
}

void ArtifactStore::put_approval(const ApprovalRecord& r) {
  if (insert_approval(impl_->db, r)) return;
  const auto stored = approval(r.pending);
  if (!stored)  // ON CONFLICT only skips on an existing identity, and the decision is UNIQUE too
    fail(
        "cannot store the approval of pending promotion {}: decision {} answers another one "
        "already",
        r.pending, r.decision);
  if (stored->decision != r.decision)
    fail("pending promotion {} was {} already by {} at {} (decision {}); it takes one answer",
         r.pending, stored->approved ? "approved" : "rejected", stored->decided_by,
         stored->created_at, stored->decision);
}

std::optional<ApprovalRecord> ArtifactStore::approval(const std::string& pending) const {
  Statement s(impl_->db,
              std::string("SELECT ") + kApprovalColumns + " FROM approvals WHERE pending = ?");
  s.bind(1, pending);
  if (!s.step()) return std::nullopt;
  return read_approval(s);
}

std::string ArtifactStore::put_note(const NoteRecord& r) {
  if (r.definition.empty()) fail("cannot store a note without its definition (empty)");
  return insert_note(impl_->db, r);
}

std::vector<NoteRecord> ArtifactStore::notes(const std::string& definition) const {
  Statement s(impl_->db, std::string("SELECT ") + kNoteColumns +
                             " FROM reconnaissance_notes WHERE definition = ? "
                             "ORDER BY created_at, rowid");
  s.bind(1, definition);
  std::vector<NoteRecord> out;
  while (s.step()) out.push_back(read_note(s));
  return out;
}

}  // namespace kh
