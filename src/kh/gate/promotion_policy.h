// The one decision a judged candidate gets (DESIGN.md "Decisions"): promote, archive (a
// regime-local win kept as a future dispatch route) or reject, from the evidence of the promotion
// flow: representative gate, full-distribution gate, re-measurement on fresh samples, high-trial
// replay. The rules are here and nowhere else; every decision carries its reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kh/gate/paired_statistics.h"

namespace kh {

enum class Decision { kPromote, kArchive, kReject };
std::string_view decision_name(Decision d);  // "promote", "archive", "reject"

struct PromotionRules {
  double min_effect = 0.01;        // a gain must exceed it (GateStatistics::min_effect)
  double regime_tolerance = 0.02;  // no regime may be slower than 1 - this (estimate)
  int replay_trials = 100;         // high-trial replay: trials per workload, at least
  // Non-empty: B repairs this correctness defect of the retained candidate (kh promote --fix),
  // which lets rule 2b promote it without a gain.
  std::string fix;
};

/// What the high-trial replay found, as the rules read it.
struct ReplayEvidence {
  int trials = 0;             // per workload, as run
  int failures = 0;           // failing trials over all workloads
  std::string first_failure;  // "workload uuid: message"
  int skipped = 0;            // (workload, variant) runs the variant cannot be drawn for
  std::string first_skip;     // "workload uuid [variant]: why"
};

/// What the promotion flow found. A stage not reached is empty (the flow stops at the first
/// stage that decides).
struct PromotionEvidence {
  std::optional<PairedGateResult> representative;  // gate on the representative set
  std::optional<PairedGateResult> full;            // gate on every workload
  std::optional<PairedGateResult> remeasured;      // the full gate again, on fresh samples
  ReplayEvidence replay;
};

struct DecisionReport {
  Decision decision = Decision::kReject;
  std::string reason;                 // one sentence, the deciding rule
  std::vector<std::string> evidence;  // one line per fact that was checked
};

/// Applies the rules, in order:
///  1. reject when any gate saw a failure of B (a correctness failure, or its paired timing
///     failed; a failure of A alone only leaves those workloads out), or the replay ran fewer trials than
///     rules.replay_trials (when the flow reached it) or had any failure;
///  2. promote when the full and re-measured gates both call the overall objective a win (interval
///     above 1 + min_effect after Holm) and no group of either has an estimate below
///     1 - regime_tolerance, and the replay is clean;
///  2b. with rules.fix (B repairs a defect of the retained candidate, said in the text): promote
///     when the overall objective of the full gate (and of the re-measured one, where it ran) is
///     not a loss and its estimate is not below 1 - regime_tolerance, no group of those gates has
///     an estimate below 1 - regime_tolerance (the representative gate's regimes count as in
///     rule 2: a loss there stops the flow), and the replay is clean: a fix need not gain, but
///     must be no slower than the tolerance allows; otherwise rules 3 and 4 decide as without it
///     (a gain with a fix is promoted by rule 2, its reason naming the fix);
///  3. archive when some group (regime) is a win in the full gate (or, when the flow stopped
///     there, the representative gate) while B is correct: a regime-local win;
///  4. reject otherwise (no gain beyond the minimum effect).
DecisionReport decide_promotion(const PromotionEvidence& evidence, const PromotionRules& rules);

/// A definition's first candidate has nothing to beat. It is promoted when it passed every
/// correctness trial on every workload and its replay is clean and long enough (rule 1 alone);
/// otherwise rejected.
struct FirstCandidateEvidence {
  int workloads = 0;                          // checked
  std::vector<std::string> failures;          // "uuid: STATUS: message" per failing workload
  ReplayEvidence replay;
};
DecisionReport decide_first_candidate(const FirstCandidateEvidence& evidence,
                                      const PromotionRules& rules);

/// Rule 2b's gates, without the replay: "" when a fix may be promoted on `full` (and the
/// re-measured gate where it ran), else why not. The flow asks it before replaying a fix.
std::string fix_blocker(const PairedGateResult& full, const PairedGateResult* remeasured,
                        const PromotionRules& rules);

/// Whether the flow should go on after the representative gate: no group is a loss, and the
/// overall estimate is not below 1 - rules.regime_tolerance. (A candidate that is not faster
/// where it is cheapest to measure is not measured everywhere.)
bool representative_gate_passes(const PairedGateResult& representative,
                                const PromotionRules& rules);

}  // namespace kh
