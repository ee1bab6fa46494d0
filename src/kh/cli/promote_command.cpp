// `kh promote CAND...`: the promotion flow (gate/promotion_flow.h) against the definition's
// retained candidate, ending in exactly one stored decision per candidate: promote (it becomes
// the retained candidate), archive (a regime-local win kept for dispatch) or reject. With several
// candidates, each is gated on the representative set; those that pass go through the whole flow
// in order of their representative estimate until one is promoted, and the rest are decided on
// their representative evidence (not taken further once one was promoted). A definition without
// a retained candidate takes one candidate: its first is judged on correctness and the replay.
// Every gate and decision is stored as it is made. With --approve, a promotion the flow grants is
// stored as pending instead (store/promotion_approval.h): no decision and no change of the
// retained candidate until a person answers it with kh approve. With --fix "DEFECT", one candidate
// that repairs a correctness defect of the retained one is promoted without a gain where it is no
// slower than the tolerance allows (promotion_policy.h, rule 2b); the defect is kept in the
// decision's reason and evidence.
// Exit status 0 when a candidate
// was promoted (or, with --approve, awaits approval), 3 otherwise.
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/gate_options.h"
#include "kh/cli/gate_progress.h"
#include "kh/cli/gate_records.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/core/person.h"
#include "kh/gate/gate_json.h"
#include "kh/gate/promotion_flow.h"

namespace kh::cli {
namespace {

constexpr int kExitNotPromoted = 3;

struct Options {
  std::vector<std::string> candidates;
  std::string definition;
  std::string workloads_file;  // "": the dataset's full set
  double regime_tolerance = PromotionRules{}.regime_tolerance;
  int replay_trials = kDefaultReplayTrials;
  int adversarial_trials = kDefaultReplayAdversarialTrials;
  std::uint64_t replay_seed = 0;  // 0: fresh
  bool approve = false;           // a granted promotion waits for kh approve
  std::string fix;                // the defect of the retained candidate B repairs (--fix)
  bool fix_given = false;
  bool json = false;
  StoreOptions store;
  GateCliOptions g;
};

void check_promote_flags(const Options& o) {
  if (!(o.regime_tolerance >= 0 && o.regime_tolerance < 1))
    fail("--regime-tolerance {}: expected a fraction in [0, 1)", o.regime_tolerance);
  if (o.replay_trials < 1) fail("--replay-trials {}: at least 1", o.replay_trials);
  if (o.adversarial_trials < 0) fail("--adversarial-trials {}: expected >= 0", o.adversarial_trials);
  if (o.fix_given) {
    if (o.fix.find_first_not_of(" \t\n") == std::string::npos)
      fail("--fix: say which defect of the retained candidate the candidate repairs");
    if (o.candidates.size() != 1)
      fail("--fix takes one candidate (the repair), not {}", o.candidates.size());
  }
}

struct Contender {
  ResolvedCandidate resolved;
  CandidateRecord record;
  std::optional<PairedGateResult> representative;
};

class Promotion {
 public:
  explicit Promotion(Options& o)
      : o_(o), store_(open_store(o.store)), ds_(Dataset::open(o.g.e.eval.root)) {}

  void run() {
    check_promote_flags(o_);
    std::vector<Contender> contenders;
    for (const auto& arg : o_.candidates) {
      Contender c;
      c.resolved = resolve_candidate_arg(arg, o_.g.e.params, o_.definition, o_.g.e.cache);
      check_backend_fits(c.resolved, o_.g.e.eval.backend);
      if (o_.definition.empty()) o_.definition = c.resolved.candidate.definition;
      c.record = candidate_record(*store_, c.resolved);
      gate_side(c.resolved);  // a candidate that did not build stops the round before any gate
      contenders.push_back(std::move(c));
    }
    def_ = ds_.definition(o_.definition);
    setup_ = resolve_gate_setup(o_.g, def_, *store_);
    request_ = make_request();

    if (const auto retained = store_->retained(def_.name)) {
      const StoredCandidate stored =
          rebuild_stored_candidate(*store_, retained->candidate, o_.g.e.cache);
      against_ = stored.record;
      request_.retained = gate_side(stored.resolved);
      request_.retained_latency = stored_latencies(*store_, against_, setup_.method);
      say(fmt::format("kh promote: against retained {} ({}), {} timer on {}, minimum effect {:g} "
                      "({}), order seed {}, replay seed {} (--replay-seed continues a killed replay)",
                      against_.name, against_.hash.substr(0, 12), setup_.method, setup_.gpu,
                      setup_.statistics.min_effect, setup_.min_effect_source,
                      setup_.run.order_seed, request_.replay.seed));
    } else {
      if (o_.fix_given)
        fail("--fix: {} has no retained candidate to repair; its first candidate is judged on "
             "correctness alone",
             def_.name);
      if (contenders.size() > 1)
        fail("{} has no retained candidate yet: promote one candidate first (kh promote CAND), "
             "then gate the others against it",
             def_.name);
      say(fmt::format("kh promote: {} has no retained candidate: the first is judged on "
                      "correctness and the replay alone (replay seed {}; --replay-seed continues a "
                      "killed replay)",
                      def_.name, request_.replay.seed));
    }

    Json decisions = Json::array();
    std::vector<std::size_t> order(contenders.size());
    std::iota(order.begin(), order.end(), 0);
    if (request_.retained && contenders.size() > 1) {
      for (auto& c : contenders) c.representative = representative_gate(c);
      // Those that pass go on, best representative estimate first; the others are decided now.
      std::vector<std::size_t> passing;
      for (std::size_t i = 0; i < contenders.size(); ++i) {
        if (representative_gate_passes(*contenders[i].representative, request_.rules)) {
          passing.push_back(i);
        } else {
          PromotionEvidence e;
          e.representative = contenders[i].representative;
          decisions.push_back(record(contenders[i], decide_promotion(e, request_.rules), Json()));
        }
      }
      std::stable_sort(passing.begin(), passing.end(), [&](std::size_t a, std::size_t b) {
        return contenders[a].representative->overall.objective.estimate >
               contenders[b].representative->overall.objective.estimate;
      });
      order = passing;
    }

    std::optional<std::string> promoted;  // "NAME was promoted" or "NAME awaits approval"
    for (std::size_t i : order) {
      Contender& c = contenders[i];
      if (promoted) {
        PromotionEvidence e;
        e.representative = c.representative;
        DecisionReport d = decide_promotion(e, request_.rules);
        if (d.decision == Decision::kReject) {
          d.reason = fmt::format("reject: not taken further, {} in this round", *promoted);
        } else {
          d.reason += fmt::format(" ({} in this round)", *promoted);
        }
        decisions.push_back(record(c, d, Json()));
        continue;
      }
      const PromotionOutcome out = promote_one(c);
      decisions.push_back(
          record(c, out.decision, out.replay ? replay_json(*out.replay) : Json()));
      if (out.decision.decision == Decision::kPromote)
        promoted = c.resolved.candidate.name + (o_.approve ? " awaits approval" : " was promoted");
    }
    if (o_.json) std::cout << decisions.dump(2) << "\n";
    if (!promoted) set_exit_code(kExitNotPromoted);
  }

 private:
  // Context and stage lines go to stderr, also with --json (stdout then holds only the JSON).
  static void say(const std::string& line) { std::cerr << line << "\n"; }

  PromotionRequest make_request() const {
    PromotionRequest r;
    r.definition = def_;
    r.workloads = drawable_workloads(def_, o_.g.e.eval.variant,
                                     select_workloads(ds_, def_, o_.workloads_file), "kh promote");
    r.run = setup_.run;
    r.statistics = setup_.statistics;
    r.objective = setup_.objective;
    r.rules.min_effect = setup_.statistics.min_effect;
    r.rules.regime_tolerance = o_.regime_tolerance;
    r.rules.replay_trials = o_.replay_trials;
    r.rules.fix = o_.fix;
    r.replay.eval = setup_.run.eval;
    r.replay.trials = o_.replay_trials;
    r.replay.adversarial_trials = o_.adversarial_trials;
    r.replay.seed = o_.replay_seed ? o_.replay_seed : (std::random_device{}() | 1ull);
    return r;
  }

  PromotionStageFn store_stages(const Contender& c) {
    return [this, &c](const PromotionStage& s) {
      if (s.run)
        store_gate(*store_, def_, against_.hash, c.record.hash, s.name, setup_, *s.run, *s.result);
      progress_.clear();
      say(fmt::format("  {}: {} done", c.resolved.candidate.name, s.name));
    };
  }
  PromotionProgressFn show_progress() {
    return [this](const std::string& phase, int done, int total) {
      progress_.show(phase, fmt::format("{} {}/{}", phase, done, total));
    };
  }

  PairedGateResult representative_gate(const Contender& c) {
    PromotionRequest r = request_;
    r.candidate = gate_side(c.resolved);
    return run_representative_gate(r, store_stages(c), show_progress());
  }

  PromotionOutcome promote_one(const Contender& c) {
    PromotionRequest r = request_;
    r.candidate = gate_side(c.resolved);
    r.representative = c.representative;
    keep_replay_in_store(r.replay, *store_, def_, c.record.hash);
    PromotionOutcome out = run_promotion(r, store_stages(c), show_progress());
    if (out.replay && out.replay->recalled > 0)
      say(fmt::format("  {}: {} of {} replay runs came from an earlier replay with seed {}",
                      c.resolved.candidate.name, out.replay->recalled, out.replay->runs.size(),
                      r.replay.seed));
    progress_.clear();
    return out;
  }

  Json record(const Contender& c, const DecisionReport& d, const Json& replay) {
    if (o_.approve && d.decision == Decision::kPromote) return record_pending(c, d, replay);
    DecisionRecord r;
    r.definition = def_.name;
    r.candidate = c.record.hash;
    r.against = against_.hash;
    r.decision = std::string(decision_name(d.decision));
    r.reason = d.reason;
    r.evidence = evidence_json(d, replay);
    r.created_at = utc_timestamp();
    r.id = store_->put_decision(r);
    if (!o_.json) {
      std::cout << fmt::format("{}: {}\n", c.resolved.candidate.name, r.reason);
      for (const auto& line : d.evidence) std::cout << "  " << line << "\n";
      std::cout << fmt::format("  decision {} stored\n", r.id.substr(0, 12));
    }
    Json j = r.evidence;
    j["id"] = r.id;
    j["candidate"] = c.record.hash;
    j["name"] = c.resolved.candidate.name;
    return j;
  }

  Json evidence_json(const DecisionReport& d, const Json& replay) const {
    Json e = decision_evidence_json(d);
    if (!replay.is_null()) e["replay"] = replay;
    e["min_effect"] = setup_.statistics.min_effect;
    e["min_effect_source"] = setup_.min_effect_source;
    e["gpu"] = setup_.gpu;
    e["timing_method"] = setup_.method;
    e["order_seed"] = setup_.run.order_seed;
    if (!o_.fix.empty()) e["fix"] = o_.fix;
    return e;
  }

  // --approve: the promotion as it would have been decided, kept pending for kh approve. In the
  // JSON its "decision" is "pending" and "id" the pending promotion's (kh round reads both).
  Json record_pending(const Contender& c, const DecisionReport& d, const Json& replay) {
    PendingPromotionRecord r;
    r.definition = def_.name;
    r.candidate = c.record.hash;
    r.against = against_.hash;
    r.reason = d.reason;
    r.evidence = evidence_json(d, replay);
    r.requested_by = person_name();
    r.created_at = utc_timestamp();
    r.id = store_->put_pending_promotion(r);
    const std::string approve = fmt::format("kh approve {} {}", def_.name, r.id.substr(0, 12));
    if (!o_.json) {
      std::cout << fmt::format("{}: pending approval: {}\n", c.resolved.candidate.name, r.reason);
      for (const auto& line : d.evidence) std::cout << "  " << line << "\n";
      std::cout << fmt::format(
          "  pending promotion {} stored; the retained candidate is unchanged until `{}` (or "
          "`{} --reject`)\n",
          r.id.substr(0, 12), approve, approve);
    }
    Json j = r.evidence;
    j["decision"] = "pending";
    j["id"] = r.id;
    j["candidate"] = c.record.hash;
    j["name"] = c.resolved.candidate.name;
    j["approve"] = approve;
    return j;
  }

  Options& o_;
  std::unique_ptr<ArtifactStore> store_;
  Dataset ds_;
  Definition def_;
  GateSetup setup_;
  PromotionRequest request_;
  CandidateRecord against_;  // empty hash when there is no retained candidate
  ProgressLine progress_{isatty(STDERR_FILENO) != 0, o_.json && isatty(STDERR_FILENO)};
};

}  // namespace

void add_promote_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "promote",
      "Gate candidates against the retained one and decide: promote, archive or reject");
  cmd->add_option("candidates", o->candidates,
                  "candidate folders (folder@NAME=value) or builtin:NAME")
      ->required();
  cmd->add_option("--definition,-d", o->definition, "the definition (required for builtins)");
  cmd->add_option("--workloads", o->workloads_file,
                  "workloads JSONL file to use as the distribution (default: the dataset's set)");
  cmd->add_option("--regime-tolerance", o->regime_tolerance,
                  "no regime may be slower than this fraction")
      ->capture_default_str();
  cmd->add_option("--replay-trials", o->replay_trials,
                  "high-trial replay: trials per workload (at least this many are required)")
      ->capture_default_str();
  cmd->add_option("--adversarial-trials", o->adversarial_trials,
                  "high-trial replay: trials per workload and adversarial variant")
      ->capture_default_str();
  cmd->add_option("--replay-seed", o->replay_seed, "replay input seed (default: drawn fresh)");
  cmd->add_flag("--approve", o->approve,
                "a promotion granted waits as pending until a person runs kh approve (the "
                "retained candidate is unchanged until then)");
  auto* fix = cmd->add_option("--fix", o->fix,
                  "the candidate repairs this correctness defect of the retained one: promoted "
                  "without a gain where it is no slower than the tolerance allows (no overall "
                  "loss, no regime below the tolerance) and its replay is clean");
  cmd->add_flag("--json", o->json, "print the decisions as JSON");
  add_gate_cli_options(cmd, o->g);
  add_store_option(cmd, o->store);
  cmd->callback([o, fix] {
    o->fix_given = fix->count() > 0;
    Promotion(*o).run();
  });
}

}  // namespace kh::cli
