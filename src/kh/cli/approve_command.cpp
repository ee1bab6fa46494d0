// `kh approve D [CANDIDATE] [--reject] [--note TEXT]`: the person's side of promotions that wait
// for approval (kh promote --approve, and kh round submit / kh agent when a person is at the
// terminal). Without CANDIDATE it lists D's pending promotions; with one (a candidate name, a
// candidate hash prefix or a pending promotion id prefix) it approves it — the candidate becomes
// the retained one — or with --reject refuses it, recording who, when and why as the promotion's
// one final decision (store/promotion_approval.h). --json for scripts.
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/core/person.h"
#include "kh/store/promotion_approval.h"

namespace kh::cli {
namespace {

constexpr std::size_t kMinPrefix = 6;  // hex digits a hash or id prefix needs to name one

struct Options {
  std::string definition;
  std::string candidate;  // "": list
  bool reject = false;
  std::string note;
  bool json = false;
  StoreOptions store;
};

std::string short_hash(const std::string& h) {
  return h.empty() ? "none" : h.substr(0, 12);
}

std::string candidate_name(const ArtifactStore& store, const std::string& hash) {
  if (hash.empty()) return "none";
  const auto c = store.candidate(hash);
  return fmt::format("{} ({})", c ? c->name : "?", short_hash(hash));
}

Json pending_json(const ArtifactStore& store, const PendingPromotionRecord& p) {
  const auto c = store.candidate(p.candidate);
  return {{"id", p.id},
          {"definition", p.definition},
          {"candidate", p.candidate},
          {"name", c ? c->name : ""},
          {"against", p.against},
          {"reason", p.reason},
          {"evidence", p.evidence},
          {"requested_by", p.requested_by},
          {"created_at", p.created_at},
          {"current", pending_promotion_is_current(store, p)}};
}

bool designates(const ArtifactStore& store, const PendingPromotionRecord& p,
                const std::string& arg) {
  const bool prefix = arg.size() >= kMinPrefix;
  if (prefix && (p.id.rfind(arg, 0) == 0 || p.candidate.rfind(arg, 0) == 0)) return true;
  const auto c = store.candidate(p.candidate);
  return c && c->name == arg;
}

void list(const Options& o, const ArtifactStore& store) {
  const auto pending = store.pending_promotions(o.definition);
  const auto retained = store.retained(o.definition);
  const std::string retained_hash = retained ? retained->candidate : "";
  if (o.json) {
    Json items = Json::array();
    for (const auto& p : pending) items.push_back(pending_json(store, p));
    std::cout << Json{{"definition", o.definition}, {"retained", retained_hash}, {"pending", items}}
                     .dump(2)
              << "\n";
    return;
  }
  if (pending.empty()) {
    std::cout << fmt::format("{}: no promotion pending approval\n", o.definition);
    return;
  }
  std::cout << fmt::format("{}: {} promotion{} pending approval (retained: {})\n", o.definition,
                           pending.size(), pending.size() == 1 ? "" : "s",
                           candidate_name(store, retained_hash));
  for (const auto& p : pending) {
    std::cout << fmt::format("  {}  {}, requested by {} at {}\n    {}\n    gated against {}{}\n",
                             short_hash(p.id), candidate_name(store, p.candidate), p.requested_by,
                             p.created_at, p.reason, candidate_name(store, p.against),
                             pending_promotion_is_current(store, p)
                                 ? ""
                                 : "; stale: the retained candidate changed since, so it can "
                                   "only be rejected (or gated again)");
  }
  std::cout << fmt::format(
      "kh approve {} ID approves one (it becomes the retained candidate); --reject refuses it; "
      "--note says why\n",
      o.definition);
}

// The one pending promotion of the definition that the argument designates.
PendingPromotionRecord designated(const Options& o, const ArtifactStore& store) {
  std::vector<PendingPromotionRecord> found;
  for (const auto& p : store.pending_promotions(o.definition))
    if (designates(store, p, o.candidate)) found.push_back(p);
  if (found.empty()) {
    // An answered one: answering it again gives the error that says how it was answered.
    const auto all = store.pending_promotions(o.definition, false);
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      if (designates(store, *it, o.candidate)) return *it;
    fail(
        "kh approve {} {}: no promotion of {} pending approval is of a candidate so named or "
        "hashed, or has such an id (kh approve {} lists them)",
        o.definition, o.candidate, o.definition, o.definition);
  }
  if (found.size() > 1) {
    std::string ids;
    for (const auto& p : found)
      ids += fmt::format("{}{} ({}, {})", ids.empty() ? "" : ", ", short_hash(p.id),
                         candidate_name(store, p.candidate), p.created_at);
    fail("kh approve {} {}: {} pending promotions match: {}; give the id", o.definition,
         o.candidate, found.size(), ids);
  }
  return found.front();
}

void answer(const Options& o, ArtifactStore& store) {
  const PendingPromotionRecord p = designated(o, store);
  const AnsweredPromotion a =
      answer_pending_promotion(store, {p.id, !o.reject, person_name(), o.note});
  const auto retained = store.retained(o.definition);
  const std::string retained_hash = retained ? retained->candidate : "";
  if (o.json) {
    std::cout << Json{{"definition", o.definition},
                      {"answer", a.approval.approved ? "approve" : "reject"},
                      {"pending", pending_json(store, a.pending)},
                      {"approval",
                       {{"pending", a.approval.pending},
                        {"decision", a.approval.decision},
                        {"approved", a.approval.approved},
                        {"decided_by", a.approval.decided_by},
                        {"note", a.approval.note},
                        {"created_at", a.approval.created_at}}},
                      {"decision",
                       {{"id", a.decision.id},
                        {"candidate", a.decision.candidate},
                        {"against", a.decision.against},
                        {"decision", a.decision.decision},
                        {"reason", a.decision.reason},
                        {"created_at", a.decision.created_at},
                        {"evidence", a.decision.evidence}}},
                      {"retained", retained_hash}}
                     .dump(2)
              << "\n";
  } else if (a.approval.approved) {
    std::cout << fmt::format(
        "{}: approved {}: it is the retained candidate now (decision {}, by {} at {})\n",
        o.definition, candidate_name(store, p.candidate), short_hash(a.decision.id),
        a.approval.decided_by, a.approval.created_at);
  } else {
    std::cout << fmt::format(
        "{}: rejected {} (decision {}, by {} at {}); the retained candidate is still {}\n",
        o.definition, candidate_name(store, p.candidate), short_hash(a.decision.id),
        a.approval.decided_by, a.approval.created_at, candidate_name(store, retained_hash));
  }
}

void run(const Options& o) {
  if (o.candidate.empty() && (o.reject || !o.note.empty()))
    fail(
        "kh approve {}: --reject and --note answer one pending promotion: give its CANDIDATE "
        "(name, hash prefix or pending id)",
        o.definition);
  auto store = open_store(o.store);
  if (o.candidate.empty()) return list(o, *store);
  answer(o, *store);
}

}  // namespace

void add_approve_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "approve", "List promotions pending approval, or approve (or --reject) one of them");
  cmd->add_option("definition", o->definition, "the definition")->required();
  cmd->add_option("candidate", o->candidate,
                  "the pending promotion to answer: candidate name, candidate hash prefix or "
                  "pending id prefix (none: list them)");
  cmd->add_flag("--reject", o->reject, "refuse the promotion (a reject decision)");
  cmd->add_option("--note", o->note, "why, recorded with the answer");
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
