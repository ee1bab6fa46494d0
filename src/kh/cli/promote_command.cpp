// `kh promote CAND...`: the promotion flow (gate/promotion_flow.h) against the definition's
// retained candidate, ending in exactly one stored decision per candidate: promote (it becomes
// the retained candidate), archive (a regime-local win kept for dispatch) or reject. With several
// candidates, each is gated on the representative set, the best one (largest representative
// estimate among those that pass it) goes through the whole flow, and the others are decided on
// their representative evidence (archive or reject). Every gate and decision is stored as it is
// made. Exit status 0 when the (best) candidate was promoted, 3 otherwise.
#include <unistd.h>

#include <iostream>
#include <random>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/gate_options.h"
#include "kh/cli/gate_progress.h"
#include "kh/cli/gate_records.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
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
  bool json = false;
  StoreOptions store;
  GateCliOptions g;
};

struct Contender {
  ResolvedCandidate resolved;
  CandidateRecord record;
};

Json replay_json(const ReplayResult& r) {
  Json runs = Json::array();
  for (const auto& x : r.runs)
    if (!x.passed)
      runs.push_back({{"workload", x.workload}, {"variant", x.variant}, {"trials", x.trials},
                      {"status", x.status}, {"message", x.message}});
  return {{"seed", r.seed},           {"trials", r.trials},
          {"adversarial_trials", r.adversarial_trials},
          {"variants", r.variants},   {"runs", r.runs.size()},
          {"failures", r.failures()}, {"failing_runs", runs}};
}

class Promotion {
 public:
  Promotion(Options& o) : o_(o), store_(open_store(o.store)), ds_(Dataset::open(o.g.e.eval.root)) {}

  void run() {
    std::vector<Contender> contenders;
    for (const auto& arg : o_.candidates) {
      Contender c;
      c.resolved = resolve_candidate_arg(arg, o_.g.e.params, o_.definition, o_.g.e.cache);
      if (o_.definition.empty()) o_.definition = c.resolved.candidate.definition;
      c.record = candidate_record(*store_, c.resolved);
      contenders.push_back(std::move(c));
    }
    def_ = ds_.definition(o_.definition);
    setup_ = resolve_gate_setup(o_.g, def_, *store_);

    PromotionRequest request;
    request.definition = def_;
    request.workloads = select_workloads(ds_, def_, o_.workloads_file);
    request.run = setup_.run;
    request.statistics = setup_.statistics;
    request.objective = setup_.objective;
    request.rules.min_effect = setup_.statistics.min_effect;
    request.rules.regime_tolerance = o_.regime_tolerance;
    request.rules.replay_trials = o_.replay_trials;
    request.replay.eval = setup_.run.eval;
    request.replay.trials = o_.replay_trials;
    request.replay.adversarial_trials = o_.adversarial_trials;
    request.replay.seed = o_.replay_seed ? o_.replay_seed : (std::random_device{}() | 1ull);

    if (const auto retained = store_->retained(def_.name)) {
      against_ = *store_->candidate(retained->candidate);
      retained_ = rebuild_stored_candidate(*store_, against_, o_.g.e.cache);
      request.retained = gate_side(retained_);
      request.retained_latency = stored_latencies(*store_, against_, setup_.method);
      say(fmt::format("kh promote: against retained {} ({}), {} timer on {}, minimum effect {:g} "
                      "({}), replay seed {}",
                      against_.name, against_.hash.substr(0, 12), setup_.method, setup_.gpu,
                      setup_.statistics.min_effect, setup_.min_effect_source, request.replay.seed));
    } else {
      say(fmt::format("kh promote: {} has no retained candidate: the first is judged on "
                      "correctness and the replay alone (replay seed {})",
                      def_.name, request.replay.seed));
    }

    std::size_t best = 0;
    if (contenders.size() > 1) best = pick_best(contenders, request);
    Json decisions = Json::array();
    for (std::size_t i = 0; i < contenders.size(); ++i) {
      if (i == best) continue;
      decisions.push_back(record_decision(contenders[i], losers_.at(i), {}));
    }
    request.candidate = gate_side(contenders[best].resolved);
    if (auto it = losers_.find(best); it != losers_.end() && it->second.representative)
      request.representative = it->second.representative;
    ProgressLine progress(isatty(STDERR_FILENO), o_.json && isatty(STDERR_FILENO));
    const PromotionOutcome out = run_promotion(
        request,
        [&](const PromotionStage& s) {
          if (s.run) store_gate(*store_, def_, against_.hash, contenders[best].record.hash, s.name,
                                setup_, *s.run, *s.result);
          progress.clear();
          say(fmt::format("  {} done", s.name));
        },
        [&](const std::string& phase, int done, int total) {
          progress.show(phase, fmt::format("{} {}/{}", phase, done, total));
        });
    progress.clear();
    if (out.replay) replay_ = replay_json(*out.replay);
    Json best_decision = record_decision(contenders[best], out.evidence, out.decision);
    decisions.insert(decisions.begin(), best_decision);
    if (o_.json) std::cout << decisions.dump(2) << "\n";
    if (out.decision.decision != Decision::kPromote) set_exit_code(kExitNotPromoted);
  }

 private:
  // Context and stage lines go to stderr, also with --json (stdout then holds only the JSON).
  static void say(const std::string& line) { std::cerr << line << "\n"; }

  // Representative gates of every contender; returns the best one's index. The others keep their
  // evidence in losers_ for their own decision.
  std::size_t pick_best(const std::vector<Contender>& contenders, const PromotionRequest& base) {
    if (!base.retained) {
      // Nothing to gate against: the first candidate is the first that is named.
      for (std::size_t i = 1; i < contenders.size(); ++i) losers_[i] = {};
      return 0;
    }
    std::optional<std::size_t> best;
    double best_estimate = 0;
    for (std::size_t i = 0; i < contenders.size(); ++i) {
      PromotionRequest r = base;
      r.candidate = gate_side(contenders[i].resolved);
      PromotionEvidence e;
      e.representative = representative_gate(r, contenders[i]);
      const double est = e.representative->overall.objective.estimate;
      if (representative_gate_passes(*e.representative, r.rules) && (!best || est > best_estimate)) {
        best = i;
        best_estimate = est;
      }
      losers_[i] = std::move(e);
    }
    return best.value_or(0);
  }

  PairedGateResult representative_gate(const PromotionRequest& r, const Contender& c) {
    const RepresentativeSet rep = select_representatives(
        partition_regimes(def_, r.workloads), r.workloads, r.retained_latency);
    std::vector<Workload> ws;
    for (const auto& id : rep.workloads)
      for (const auto& w : r.workloads)
        if (w.uuid == id) ws.push_back(w);
    std::vector<WorkloadGroup> groups;
    for (const auto& g : rep.groups) groups.push_back(g.group);
    say(fmt::format("  representative gate of {} on {} workloads", c.resolved.candidate.name,
                    ws.size()));
    const PairedRun run = run_paired(def_, ws, *r.retained, r.candidate, r.run);
    const PairedGateResult result = judge_run(run, groups, r.objective, r.statistics);
    store_gate(*store_, def_, against_.hash, c.record.hash, "representative", setup_, run, result);
    return result;
  }

  Json record_decision(const Contender& c, const PromotionEvidence& e,
                       std::optional<DecisionReport> report) {
    DecisionReport d = report ? *report : decide_promotion(e, PromotionRules{setup_.statistics.min_effect, o_.regime_tolerance, o_.replay_trials});
    if (!report) d.reason += " (not the round's best candidate)";
    if (!report && d.decision == Decision::kPromote) {
      d.decision = Decision::kArchive;
      d.reason = "archive: a win, but not the round's best candidate";
    }
    DecisionRecord r;
    r.definition = def_.name;
    r.candidate = c.record.hash;
    r.against = against_.hash;
    r.decision = std::string(decision_name(d.decision));
    r.reason = d.reason;
    r.evidence = decision_evidence_json(d);
    if (report && !replay_.is_null()) r.evidence["replay"] = replay_;
    r.evidence["min_effect"] = setup_.statistics.min_effect;
    r.evidence["min_effect_source"] = setup_.min_effect_source;
    r.evidence["gpu"] = setup_.gpu;
    r.evidence["timing_method"] = setup_.method;
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

  Options& o_;
  std::unique_ptr<ArtifactStore> store_;
  Dataset ds_;
  Definition def_;
  GateSetup setup_;
  CandidateRecord against_;  // empty hash when there is no retained candidate
  ResolvedCandidate retained_;
  std::map<std::size_t, PromotionEvidence> losers_;
  Json replay_;
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
  cmd->add_flag("--json", o->json, "print the decisions as JSON");
  add_gate_cli_options(cmd, o->g);
  add_store_option(cmd, o->store);
  cmd->callback([o] { Promotion(*o).run(); });
}

}  // namespace kh::cli
