// Promotion rules: see promotion_policy.h for the order. The rules read only the structs of
// paired_statistics.h (verdicts and intervals already computed), so a decision can be re-derived
// from stored evidence without re-running any statistics.
#include "kh/gate/promotion_policy.h"

#include <fmt/format.h>

#include "kh/core/error.h"

namespace kh {
namespace {

/// A speedup as a signed relative change: 1.031 -> "+3.1 %".
std::string percent(double speedup) {
  return fmt::format("{:+.1f} %", (speedup - 1) * 100);
}

/// An interval as the example reasons read: "+3.1 % [1.8, 4.4]".
std::string interval_text(const Interval& i) {
  return fmt::format("{} [{:.1f}, {:.1f}]", percent(i.estimate), (i.lo - 1) * 100,
                     (i.hi - 1) * 100);
}

/// A threshold fraction in percent without trailing zeros: 0.02 -> "2".
std::string threshold_text(double fraction) {
  return fmt::format("{:g}", fraction * 100);
}

struct NamedGate {
  const char* name;  // as it appears in reasons: "the full gate"
  const char* key;   // as it starts an evidence line: "full"
  const PairedGateResult* gate;
};

std::vector<NamedGate> present_gates(const PromotionEvidence& e) {
  std::vector<NamedGate> out;
  if (e.representative)
    out.push_back({"the representative gate", "representative", &*e.representative});
  if (e.full) out.push_back({"the full gate", "full", &*e.full});
  if (e.remeasured) out.push_back({"the re-measured gate", "re-measured", &*e.remeasured});
  return out;
}

std::string evidence_line(const NamedGate& g) {
  const PairedGateResult& r = *g.gate;
  int wins = 0, ties = 0, losses = 0;
  for (const WorkloadGate& w : r.workloads) {
    if (w.verdict == Verdict::kWin) ++wins;
    if (w.verdict == Verdict::kTie) ++ties;
    if (w.verdict == Verdict::kLoss) ++losses;
  }
  std::string groups;
  for (const GroupGate& grp : r.groups)
    groups += fmt::format("{}'{}' {} {}", groups.empty() ? "" : ", ", grp.name,
                          verdict_name(grp.verdict), interval_text(grp.objective));
  return fmt::format(
      "{} gate: overall {} ({}) over {} workloads; workloads {} wins, {} ties, {} losses; "
      "groups: {}; {}",
      g.key, interval_text(r.overall.objective), verdict_name(r.overall.verdict),
      r.workloads.size(), wins, ties, losses, groups.empty() ? "none" : groups,
      !r.b_correct   ? "a failure of B (correctness, or its paired timing)"
      : !r.a_correct ? "B correct; A (the baseline) failed on some workloads, which were left out"
                     : "A and B correct");
}

bool replay_reached(const PromotionEvidence& e) {
  return e.replay.trials > 0 || e.replay.failures > 0 || !e.replay.first_failure.empty();
}

/// The overall objective counts as a gain only when the statistics call it a win (Holm applied)
/// and the interval clears the rules' own minimum effect, which may be stricter than the one the
/// gate was judged with.
bool overall_gains(const PairedGateResult& r, const PromotionRules& rules) {
  return r.overall.verdict == Verdict::kWin && r.overall.objective.lo > 1 + rules.min_effect;
}

const GroupGate* slowest_group_below_tolerance(const PairedGateResult& r,
                                               const PromotionRules& rules) {
  const GroupGate* worst = nullptr;
  for (const GroupGate& g : r.groups)
    if (g.objective.estimate < 1 - rules.regime_tolerance &&
        (!worst || g.objective.estimate < worst->objective.estimate))
      worst = &g;
  return worst;
}

/// Why the gates do not show a global gain (rule 2 without the replay), or "" when they do.
std::string global_blocker(const PromotionEvidence& e, const PromotionRules& rules) {
  if (!e.full) {
    if (!e.representative) return "no gate was run";
    const PairedGateResult& rep = *e.representative;
    for (const GroupGate& g : rep.groups)
      if (g.verdict == Verdict::kLoss)
        return fmt::format("the representative gate found regime '{}' a loss at {}", g.name,
                           interval_text(g.objective));
    if (rep.overall.objective.estimate < 1 - rules.regime_tolerance)
      return fmt::format("the representative gate is at {}, below the -{} % tolerance",
                         interval_text(rep.overall.objective),
                         threshold_text(rules.regime_tolerance));
    return "the full-distribution gate was not run";
  }
  const struct {
    const char* what;   // the overall objective's subject
    const char* where;  // the gate, for a regime
    const PairedGateResult* gate;
  } stages[] = {{"the full distribution", "the full gate", &*e.full},
                {"the re-measurement on fresh samples", "the re-measured gate",
                 e.remeasured ? &*e.remeasured : nullptr}};
  for (const auto& s : stages) {
    if (!s.gate) return "the gain was not re-measured on fresh samples";
    if (!overall_gains(*s.gate, rules))
      return fmt::format("{} is at {} ({}), not a gain beyond the {} % minimum effect", s.what,
                         interval_text(s.gate->overall.objective),
                         verdict_name(s.gate->overall.verdict), threshold_text(rules.min_effect));
    if (const GroupGate* g = slowest_group_below_tolerance(*s.gate, rules))
      return fmt::format("regime '{}' is at {} in {}, below the -{} % tolerance", g->name,
                         interval_text(g->objective), s.where,
                         threshold_text(rules.regime_tolerance));
  }
  return "";
}

/// Rule 2b on the evidence: "" when the fix's gates allow it, else why not (`blocker`, rule 2's,
/// where the flow stopped before the full gate).
std::string fix_gates_blocker(const PromotionEvidence& e, const PromotionRules& rules,
                              const std::string& blocker) {
  if (!e.full) return blocker;
  return fix_blocker(*e.full, e.remeasured ? &*e.remeasured : nullptr, rules);
}

DecisionReport decided(DecisionReport report, Decision d, std::string reason) {
  report.decision = d;
  report.reason = fmt::format("{}: {}", decision_name(d), reason);
  return report;
}

// The replay's evidence line. Skipped runs are said, with the first reason: a variant the
// workloads cannot be drawn for tested nothing there, and a reader must not take it for clean.
std::string replay_line(const ReplayEvidence& r) {
  std::string line =
      fmt::format("replay: {} trials per workload, {} failing{}", r.trials, r.failures,
                  r.first_failure.empty() ? "" : " (first: " + r.first_failure + ")");
  if (r.skipped > 0)
    line += fmt::format(", {} run{} skipped (first: {})", r.skipped, r.skipped == 1 ? "" : "s",
                        r.first_skip);
  return line;
}

}  // namespace

std::string_view decision_name(Decision d) {
  switch (d) {
    case Decision::kPromote:
      return "promote";
    case Decision::kArchive:
      return "archive";
    case Decision::kReject:
      return "reject";
  }
  fail("decision_name: unknown decision {}", static_cast<int>(d));
}

DecisionReport decide_promotion(const PromotionEvidence& evidence, const PromotionRules& rules) {
  if (rules.min_effect < 0 || rules.regime_tolerance < 0 || rules.regime_tolerance >= 1)
    fail("promotion rules: min_effect {} and regime_tolerance {} must be >= 0 (tolerance < 1)",
         rules.min_effect, rules.regime_tolerance);
  if (evidence.replay.trials < 0 || evidence.replay.failures < 0)
    fail("promotion evidence: replay_trials {} and replay_failures {} must be >= 0",
         evidence.replay.trials, evidence.replay.failures);

  DecisionReport report;
  const std::vector<NamedGate> gates = present_gates(evidence);
  for (const NamedGate& g : gates) report.evidence.push_back(evidence_line(g));
  const bool replayed = replay_reached(evidence);
  if (replayed)
    report.evidence.push_back(replay_line(evidence.replay));
  else
    report.evidence.push_back("replay: not run");

  // 1. Correctness first: a speed gain never buys back a wrong result.
  for (const NamedGate& g : gates)
    if (!g.gate->b_correct)
      return decided(std::move(report), Decision::kReject,
                     fmt::format("{} saw a failure of B on some workload (a correctness failure, "
                                 "or its paired timing failed), so B cannot be judged on speed",
                                 g.name));
  if (replayed && evidence.replay.failures > 0)
    return decided(
        std::move(report), Decision::kReject,
        fmt::format("{} failing trial{} in the {}-trial replay{}", evidence.replay.failures,
                    evidence.replay.failures == 1 ? "" : "s", evidence.replay.trials,
                    evidence.replay.first_failure.empty()
                        ? ""
                        : " (first: " + evidence.replay.first_failure + ")"));
  if (replayed && evidence.replay.trials < rules.replay_trials)
    return decided(std::move(report), Decision::kReject,
                   fmt::format("the replay ran {} trials per workload, fewer than the {} required "
                               "to trust rare failures are absent",
                               evidence.replay.trials, rules.replay_trials));

  // 2. A global gain, confirmed on fresh samples, hurting no regime, and replayed clean.
  std::string blocker = global_blocker(evidence, rules);
  if (blocker.empty()) {
    // The flow replays only what it means to promote; a global gain without a replay is not
    // promotion evidence (its correctness was seen on a few trials only).
    if (!replayed)
      return decided(
          std::move(report), Decision::kReject,
          fmt::format("the gates show a gain but no {}-trial replay was run", rules.replay_trials));
    return decided(
        std::move(report), Decision::kPromote,
        fmt::format("{} over the full distribution, re-measured {}; no regime below -{} %; "
                    "{}-trial replay clean{}",
                    interval_text(evidence.full->overall.objective),
                    interval_text(evidence.remeasured->overall.objective),
                    threshold_text(rules.regime_tolerance), evidence.replay.trials,
                    rules.fix.empty() ? "" : fmt::format("; also a fix ({})", rules.fix)));
  }

  // 2b. A fix of the retained candidate's defect: promoted without a gain where it is no slower
  // than the tolerance allows. Where it is slower, rules 3 and 4 decide as without --fix.
  if (!rules.fix.empty()) {
    const std::string fix_block = fix_gates_blocker(evidence, rules, blocker);
    if (fix_block.empty()) {
      if (!replayed)
        return decided(std::move(report), Decision::kReject,
                       fmt::format("the fix ({}) is within the tolerance in the gates but no {}-trial "
                                   "replay was run",
                                   rules.fix, rules.replay_trials));
      return decided(
          std::move(report), Decision::kPromote,
          fmt::format("a fix ({}), not a gain: the full distribution at {} ({}); no regime below "
                      "-{} %; {}-trial replay clean",
                      rules.fix, interval_text(evidence.full->overall.objective),
                      verdict_name(evidence.full->overall.verdict),
                      threshold_text(rules.regime_tolerance), evidence.replay.trials));
    }
    blocker = fmt::format("{}, so the fix ({}) is not promoted either", fix_block, rules.fix);
  }

  // 3. A regime-local win is kept for dispatch: judged where the flow stopped deciding.
  const PairedGateResult* local =
      evidence.full ? &*evidence.full
                    : (evidence.representative ? &*evidence.representative : nullptr);
  if (local) {
    std::string wins;
    for (const GroupGate& g : local->groups)
      if (g.verdict == Verdict::kWin)
        wins +=
            fmt::format("{}'{}' {}", wins.empty() ? "" : ", ", g.name, interval_text(g.objective));
    if (!wins.empty())
      return decided(std::move(report), Decision::kArchive,
                     fmt::format("regime-local win in {} ({}), not promoted because {}", wins,
                                 evidence.full ? "full gate" : "representative gate", blocker));
  }

  // 4. Nothing gained beyond the minimum effect.
  return decided(std::move(report), Decision::kReject, blocker);
}

std::string fix_blocker(const PairedGateResult& full, const PairedGateResult* remeasured,
                        const PromotionRules& rules) {
  const struct {
    const char* what;   // the overall objective's subject
    const char* where;  // the gate, for a regime
    const PairedGateResult* gate;
  } stages[] = {{"the full distribution", "the full gate", &full},
                {"the re-measurement", "the re-measured gate", remeasured}};
  for (const auto& s : stages) {
    if (!s.gate) continue;
    const Interval& overall = s.gate->overall.objective;
    if (s.gate->overall.verdict == Verdict::kLoss)
      return fmt::format("{} is a loss at {}", s.what, interval_text(overall));
    if (overall.estimate < 1 - rules.regime_tolerance)
      return fmt::format("{} is at {}, below the -{} % tolerance", s.what, interval_text(overall),
                         threshold_text(rules.regime_tolerance));
    if (const GroupGate* g = slowest_group_below_tolerance(*s.gate, rules))
      return fmt::format("regime '{}' is at {} in {}, below the -{} % tolerance", g->name,
                         interval_text(g->objective), s.where,
                         threshold_text(rules.regime_tolerance));
  }
  return "";
}

DecisionReport decide_first_candidate(const FirstCandidateEvidence& evidence,
                                      const PromotionRules& rules) {
  DecisionReport report;
  report.evidence.push_back(fmt::format("correctness: {} workloads, {} failing{}", evidence.workloads,
                                        evidence.failures.size(),
                                        evidence.failures.empty()
                                            ? ""
                                            : " (first: " + evidence.failures.front() + ")"));
  report.evidence.push_back(replay_line(evidence.replay));
  if (evidence.workloads == 0)
    return decided(std::move(report), Decision::kReject, "no workload was checked");
  if (!evidence.failures.empty())
    return decided(std::move(report), Decision::kReject,
                   fmt::format("fails {} of {} workloads (first: {})", evidence.failures.size(),
                               evidence.workloads, evidence.failures.front()));
  if (evidence.replay.failures > 0)
    return decided(std::move(report), Decision::kReject,
                   fmt::format("{} failing run{} in the {}-trial replay (first: {})",
                               evidence.replay.failures, evidence.replay.failures == 1 ? "" : "s",
                               evidence.replay.trials, evidence.replay.first_failure));
  if (evidence.replay.trials < rules.replay_trials)
    return decided(std::move(report), Decision::kReject,
                   fmt::format("the replay ran {} trials per workload, fewer than the {} required",
                               evidence.replay.trials, rules.replay_trials));
  return decided(std::move(report), Decision::kPromote,
                 fmt::format("the definition's first candidate: correct on all {} workloads and a "
                             "clean {}-trial replay",
                             evidence.workloads, evidence.replay.trials));
}

bool representative_gate_passes(const PairedGateResult& representative,
                                const PromotionRules& rules) {
  // A correctness failure decides the candidate already; measuring it everywhere is wasted time.
  if (!representative.b_correct) return false;
  for (const GroupGate& g : representative.groups)
    if (g.verdict == Verdict::kLoss) return false;
  return representative.overall.objective.estimate >= 1 - rules.regime_tolerance;
}

}  // namespace kh
