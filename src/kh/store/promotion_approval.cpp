#include "kh/store/promotion_approval.h"

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/store/sqlite_db.h"

namespace kh {
namespace {

std::string short_hash(const std::string& hash) {
  return hash.empty() ? "none" : hash.substr(0, 12);
}

std::string name_of(const ArtifactStore& store, const std::string& hash) {
  if (hash.empty()) return "none";
  const auto c = store.candidate(hash);
  return fmt::format("{} ({})", c ? c->name : "?", short_hash(hash));
}

}  // namespace

bool pending_promotion_is_current(const ArtifactStore& store, const PendingPromotionRecord& p) {
  const auto retained = store.retained(p.definition);
  return (retained ? retained->candidate : std::string()) == p.against;
}

AnsweredPromotion answer_pending_promotion(ArtifactStore& store, const PromotionAnswer& answer) {
  Transaction t(store.db());
  const auto p = store.pending_promotion(answer.pending);
  if (!p)
    fail("{}: no pending promotion {} (kh approve D lists them)", store.location().dir.string(),
         answer.pending);
  if (const auto prior = store.approval(p->id))
    fail(
        "the pending promotion {} of {} was {} already by {} at {} (decision {}); it takes one "
        "answer",
        short_hash(p->id), name_of(store, p->candidate), prior->approved ? "approved" : "rejected",
        prior->decided_by, prior->created_at, short_hash(prior->decision));
  if (answer.approve && !pending_promotion_is_current(store, *p)) {
    const auto retained = store.retained(p->definition);
    fail(
        "{}: the pending promotion of {} was gated against {}, but the retained candidate is now "
        "{} (promoted at {}): the gain was measured against a baseline that is gone; gate it "
        "again (kh promote) or refuse it (kh approve {} {} --reject)",
        p->definition, name_of(store, p->candidate), name_of(store, p->against),
        name_of(store, retained ? retained->candidate : ""), retained ? retained->created_at : "?",
        p->definition, short_hash(p->id));
  }

  const std::string at = utc_timestamp();
  DecisionRecord d;
  d.definition = p->definition;
  d.candidate = p->candidate;
  d.against = p->against;
  d.decision = answer.approve ? "promote" : "reject";
  d.reason = answer.approve ? p->reason
                            : fmt::format("reject: {} refused the promotion{}", answer.by,
                                          answer.note.empty() ? std::string() : ": " + answer.note);
  d.evidence = p->evidence.is_object() ? p->evidence : Json{{"pending_evidence", p->evidence}};
  d.evidence["decision"] = d.decision;
  d.evidence["reason"] = d.reason;
  // The lines kh retained prints: the gate's evidence, then the person's answer.
  Json& lines = d.evidence["evidence"];
  if (!lines.is_array()) lines = Json::array();
  if (!answer.approve) lines.push_back("kh promote granted it: " + p->reason);
  lines.push_back(fmt::format("{} by {} at {}{}", answer.approve ? "approved" : "rejected",
                              answer.by, at, answer.note.empty() ? "" : ": " + answer.note));
  d.evidence["approval"] = {{"pending", p->id},
                            {"approved", answer.approve},
                            {"by", answer.by},
                            {"at", at},
                            {"note", answer.note},
                            {"requested_by", p->requested_by},
                            {"requested_at", p->created_at}};
  d.created_at = at;
  d.id = store.put_decision(d);

  ApprovalRecord a;
  a.pending = p->id;
  a.decision = d.id;
  a.approved = answer.approve;
  a.decided_by = answer.by;
  a.note = answer.note;
  a.created_at = at;
  store.put_approval(a);
  t.commit();
  // The decision as stored (put may have replaced invalid UTF-8).
  for (const auto& stored : store.decisions(d.definition, d.candidate))
    if (stored.id == d.id) d = stored;
  return {*p, a, d};
}

}  // namespace kh
