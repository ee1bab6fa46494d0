// A person's answer to a promotion waiting for approval (`kh approve`). kh promote --approve keeps
// a promotion it grants as a PendingPromotionRecord instead of a decision, so the retained
// candidate does not move; the answer turns it into exactly one final decision, written in the
// same transaction as the ApprovalRecord that names it:
//   approve: the "promote" decision kh promote would have written (the same reason and evidence,
//            plus who approved it, when and why); the candidate becomes the retained one;
//   reject:  a "reject" decision saying who refused it; nothing retained changes.
// An approval is refused once the retained candidate is no longer the one the promotion was gated
// against (another promotion was approved or made meanwhile): its gain was measured against a
// baseline that is gone. Rejection is always possible.
#pragma once

#include <string>

#include "kh/store/artifact_store.h"

namespace kh {

struct PromotionAnswer {
  std::string pending;  // pending_promotions.id
  bool approve = false;
  std::string by;    // who answers: "user@host"
  std::string note;  // why, may be ""
};

struct AnsweredPromotion {
  PendingPromotionRecord pending;
  ApprovalRecord approval;
  DecisionRecord decision;  // the final decision, as stored
};

/// Records the answer and its decision in one (exclusive) transaction, so two people answering at
/// once give one answer; throws, writing nothing, when the promotion is unknown, answered already,
/// or (approve) no longer gated against the retained candidate.
AnsweredPromotion answer_pending_promotion(ArtifactStore& store, const PromotionAnswer& answer);

/// Whether the definition's retained candidate is still the one `p` was gated against (none, for
/// a first candidate): only then can it be approved.
bool pending_promotion_is_current(const ArtifactStore& store, const PendingPromotionRecord& p);

}  // namespace kh
