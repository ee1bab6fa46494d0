// `kh retained D`: the definition's retained candidate (the one promoted last) with the decision
// that made it so, and the decisions taken since. --json for scripts. `--source FOLDER` checks
// that a candidate folder (the kernel library's kernels/<op>/) hashes to the retained candidate:
// the test that keeps the library's source and the promotion record one truth (exit 3 if not;
// exit 4 while a new operator awaits its first promotion: nothing of its definition was ever
// promoted and this source was never judged, so there is no record it could contradict). A
// promotion pending approval (kh approve) is not retained: it is listed as such, and a source
// that is only pending does not match.
#include <iostream>

#include <fmt/format.h>

#include "kh/build/candidate.h"
#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"

namespace kh::cli {
namespace {

constexpr int kExitNoneRetained = 3;   // also: --source is not the retained candidate
constexpr int kExitNeverJudged = 4;    // --source: no promotion of its definition, no decision on it
constexpr std::size_t kRecentDecisions = 10;

struct Options {
  std::string definition;
  std::string source;  // a candidate folder[@NAME=value,...] to check against the retained one
  bool json = false;
  StoreOptions store;
};

Json decision_json(const DecisionRecord& d, const ArtifactStore& store) {
  const auto c = store.candidate(d.candidate);
  return {{"id", d.id},
          {"candidate", d.candidate},
          {"name", c ? c->name : ""},
          {"against", d.against},
          {"decision", d.decision},
          {"reason", d.reason},
          {"created_at", d.created_at},
          {"evidence", d.evidence}};
}

Json pending_json(const PendingPromotionRecord& p, const ArtifactStore& store) {
  const auto c = store.candidate(p.candidate);
  return {{"id", p.id},
          {"candidate", p.candidate},
          {"name", c ? c->name : ""},
          {"against", p.against},
          {"reason", p.reason},
          {"requested_by", p.requested_by},
          {"created_at", p.created_at}};
}

// Said after the verdict: a promotion of the definition waits for a person.
void print_pending(const std::vector<PendingPromotionRecord>& pending, const ArtifactStore& store,
                   const std::string& definition) {
  for (const auto& p : pending) {
    const auto c = store.candidate(p.candidate);
    std::cout << fmt::format("pending approval, not retained: {} ({}) since {}: kh approve {} {}\n",
                             c ? c->name : "?", p.candidate.substr(0, 12), p.created_at, definition,
                             p.id.substr(0, 12));
  }
}

/// --source: the folder's candidate hash against the retained one's.
void check_source(const Options& o, ArtifactStore& store,
                  const std::optional<DecisionRecord>& retained) {
  const auto [dir, params] = split_params(o.source);
  const Candidate c = load_candidate(dir);
  if (c.definition != o.definition)
    fail("--source {}: candidate {} is for definition {}, not {}", o.source, c.name, c.definition,
         o.definition);
  const CandidateRecord r = record_candidate(store, c, resolve_params(c, params));
  const bool same = retained && retained->candidate == r.hash;
  const auto decisions = store.decisions(o.definition, r.hash);
  const std::optional<DecisionRecord> judged =  // the newest decision on this very source
      decisions.empty() ? std::nullopt : std::optional<DecisionRecord>(decisions.front());
  const bool pending = !retained && !judged;
  std::vector<PendingPromotionRecord> waiting;  // promotions of this very source awaiting approval
  for (const auto& p : store.pending_promotions(o.definition))
    if (p.candidate == r.hash) waiting.push_back(p);
  if (o.json) {
    Json approval = Json::array();
    for (const auto& p : waiting) approval.push_back(pending_json(p, store));
    std::cout << Json{{"definition", o.definition},
                      {"source", o.source},
                      {"source_hash", r.hash},
                      {"retained", retained ? retained->candidate : ""},
                      {"matches", same},
                      {"awaiting_first_promotion", pending},
                      {"pending_approval", approval}}
                     .dump(2)
              << "\n";
  } else if (same) {
    std::cout << fmt::format("{}: {} is the retained candidate ({})\n", o.definition, o.source,
                             r.hash.substr(0, 12));
  } else if (pending) {
    std::cout << fmt::format(
        "{}: {} ({}) awaits its first promotion: no candidate of {} was ever promoted and this "
        "source was never judged; kh promote it on a GPU and keep the store's bundle in memory/\n",
        o.definition, o.source, r.hash.substr(0, 12), o.definition);
  } else if (!retained) {
    std::cout << fmt::format(
        "{}: {} ({}) was judged `{}` at {} and nothing of {} was promoted: a source without a "
        "promotion cannot stay in the library\n",
        o.definition, o.source, r.hash.substr(0, 12), judged->decision, judged->created_at,
        o.definition);
  } else {
    std::cout << fmt::format(
        "{}: {} hashes to {}, not to the retained candidate {} promoted at {}: the source was "
        "changed without a promotion (kh promote it) or a promotion was not recorded in memory/\n",
        o.definition, o.source, r.hash.substr(0, 12), retained->candidate.substr(0, 12),
        retained->created_at);
  }
  if (!o.json && !same) print_pending(waiting, store, o.definition);
  if (!same) set_exit_code(pending ? kExitNeverJudged : kExitNoneRetained);
}

void run(const Options& o) {
  auto store = open_store(o.store);
  const auto retained = store->retained(o.definition);
  if (!o.source.empty()) return check_source(o, *store, retained);
  const auto decisions = store->decisions(o.definition);
  const auto waiting = store->pending_promotions(o.definition);
  if (o.json) {
    Json recent = Json::array();
    for (std::size_t i = 0; i < decisions.size() && i < kRecentDecisions; ++i)
      recent.push_back(decision_json(decisions[i], *store));
    Json approval = Json::array();
    for (const auto& p : waiting) approval.push_back(pending_json(p, *store));
    std::cout << Json{{"definition", o.definition},
                      {"retained", retained ? decision_json(*retained, *store) : Json(nullptr)},
                      {"recent_decisions", recent},
                      {"pending_approval", approval}}
                     .dump(2)
              << "\n";
  } else if (!retained) {
    std::cout << fmt::format("{}: no retained candidate (kh promote CAND makes the first)\n",
                             o.definition);
  } else {
    const auto c = store->candidate(retained->candidate);
    std::cout << fmt::format("{}: retained {} ({}) since {}\n  {}\n", o.definition,
                             c ? c->name : "?", retained->candidate.substr(0, 12),
                             retained->created_at, retained->reason);
    if (retained->evidence.contains("evidence"))
      for (const auto& line : retained->evidence.at("evidence"))
        std::cout << "    " << line.get<std::string>() << "\n";
  }
  if (!o.json && decisions.size() > 1) {
    std::cout << "recent decisions:\n";
    for (std::size_t i = 0; i < decisions.size() && i < kRecentDecisions; ++i) {
      const auto c = store->candidate(decisions[i].candidate);
      std::cout << fmt::format("  {}  {:<8} {} ({})\n", decisions[i].created_at,
                               decisions[i].decision, c ? c->name : "?",
                               decisions[i].candidate.substr(0, 12));
    }
  }
  if (!o.json) print_pending(waiting, *store, o.definition);
  if (!retained) set_exit_code(kExitNoneRetained);
}

}  // namespace

void add_retained_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("retained", "Show a definition's retained candidate and decisions");
  cmd->add_option("definition", o->definition, "the definition")->required();
  cmd->add_option("--source", o->source,
                  "check that this candidate folder (folder@NAME=value) is the retained candidate "
                  "(exit 3 if not, 4 if nothing of the definition was promoted and the folder "
                  "was never judged)");
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
