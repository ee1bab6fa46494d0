// Promotion decisions from hand-built gate results: a clear, confirmed, replayed win is promoted;
// a tie, a regime-local win with a regime loss, any failing replay trial, too short a replay and
// any correctness failure are not; a collapsing regime stops the flow at the representative gate;
// a fix (kh promote --fix) is promoted at a tie, never at a loss or without a clean replay.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/gate/promotion_policy.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Interval around(double estimate, double half_width) {
  return {estimate, estimate - half_width, estimate + half_width};
}

GroupGate group(const std::string& name, double estimate, double half_width, Verdict v) {
  GroupGate g;
  g.name = name;
  g.objective = around(estimate, half_width);
  g.verdict = v;
  return g;
}

/// A gate over `n` workloads, each with the given verdict and speedup, two regimes and an overall.
PairedGateResult gate(GroupGate overall, std::vector<GroupGate> groups, int n = 10,
                      Verdict workload_verdict = Verdict::kWin, double workload_speedup = 1.03) {
  PairedGateResult r;
  for (int i = 0; i < n; ++i) {
    WorkloadGate w;
    w.workload = "w" + std::to_string(i);
    w.speedup = around(workload_speedup, 0.01);
    w.verdict = workload_verdict;
    r.workloads.push_back(w);
  }
  r.overall = std::move(overall);
  r.overall.name = "all";
  r.groups = std::move(groups);
  return r;
}

PairedGateResult clear_win(double estimate = 1.031) {
  return gate(group("all", estimate, 0.013, Verdict::kWin),
              {group("small", estimate, 0.02, Verdict::kWin),
               group("large", estimate - 0.01, 0.02, Verdict::kWin)});
}

PromotionEvidence promotable() {
  PromotionEvidence e;
  e.representative = clear_win();
  e.full = clear_win(1.031);
  e.remeasured = clear_win(1.029);
  e.replay.trials = 100;
  return e;
}

TEST(PromotionPolicy, ClearConfirmedWinWithCleanReplayIsPromoted) {
  const DecisionReport d = decide_promotion(promotable(), PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kPromote) << d.reason;
  EXPECT_EQ(decision_name(d.decision), "promote");
  EXPECT_THAT(d.reason, HasSubstr("promote: +3.1 % [1.8, 4.4] over the full distribution"));
  EXPECT_THAT(d.reason, HasSubstr("re-measured +2.9 % [1.6, 4.2]"));
  EXPECT_THAT(d.reason, HasSubstr("no regime below -2 %"));
  EXPECT_THAT(d.reason, HasSubstr("100-trial replay clean"));
  // One line per stage and one for the replay, each with the facts that were checked.
  ASSERT_EQ(d.evidence.size(), 4u);
  EXPECT_THAT(d.evidence[1], HasSubstr("full gate: overall +3.1 % [1.8, 4.4] (win)"));
  EXPECT_THAT(d.evidence[1], HasSubstr("10 wins, 0 ties, 0 losses"));
  EXPECT_THAT(d.evidence[1], HasSubstr("'small' win"));
  EXPECT_THAT(d.evidence[3], HasSubstr("replay: 100 trials per workload, 0 failing"));
}

TEST(PromotionPolicy, GainBelowTheMinimumEffectIsRejected) {
  PromotionEvidence e = promotable();
  const PairedGateResult ties =
      gate(group("all", 1.004, 0.008, Verdict::kTie),
           {group("small", 1.005, 0.01, Verdict::kTie), group("large", 1.003, 0.01, Verdict::kTie)},
           10, Verdict::kTie, 1.004);
  e.full = ties;
  e.remeasured.reset();
  e.replay.trials = 0;
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("reject: the full distribution is at +0.4 %"));
  EXPECT_THAT(d.reason, HasSubstr("1 % minimum effect"));
  EXPECT_THAT(d.evidence[1], HasSubstr("0 wins, 10 ties, 0 losses"));
  EXPECT_THAT(d.evidence.back(), HasSubstr("replay: not run"));
}

TEST(PromotionPolicy, AWinBelowTheRulesMinimumEffectIsNotAGain) {
  // The gate called it a win against its own smaller minimum effect; the rules ask for more.
  PromotionEvidence e = promotable();
  PromotionRules rules;
  rules.min_effect = 0.025;
  const DecisionReport d = decide_promotion(e, rules);
  EXPECT_NE(d.decision, Decision::kPromote) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("2.5 % minimum effect"));
}

TEST(PromotionPolicy, RegimeWinWithAnotherRegimeLossIsArchived) {
  PromotionEvidence e = promotable();
  const PairedGateResult mixed =
      gate(group("all", 1.015, 0.004, Verdict::kWin),
           {group("small", 1.08, 0.02, Verdict::kWin), group("large", 0.95, 0.01, Verdict::kLoss)});
  e.full = mixed;
  e.remeasured = mixed;
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kArchive) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("archive: regime-local win in 'small' +8.0 %"));
  EXPECT_THAT(d.reason, HasSubstr("regime 'large' is at -5.0 %"));
  EXPECT_THAT(d.reason, HasSubstr("below the -2 % tolerance"));
}

TEST(PromotionPolicy, RegimeWinWhenTheFlowStoppedAtTheRepresentativeGateIsArchived) {
  PromotionEvidence e;
  e.representative =
      gate(group("all", 0.99, 0.01, Verdict::kTie),
           {group("small", 1.06, 0.02, Verdict::kWin), group("large", 0.97, 0.02, Verdict::kTie)});
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kArchive) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("representative gate"));
  EXPECT_THAT(d.reason, HasSubstr("full-distribution gate was not run"));
}

TEST(PromotionPolicy, OneFailingReplayTrialIsRejectedWithThatFailure) {
  PromotionEvidence e = promotable();
  e.replay.failures = 1;
  e.replay.first_failure = "3f1c-uuid: trial 57: output[12,3] mismatch";
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("1 failing trial in the 100-trial replay"));
  EXPECT_THAT(d.reason, HasSubstr("3f1c-uuid: trial 57: output[12,3] mismatch"));
  EXPECT_THAT(d.evidence.back(), HasSubstr("1 failing (first: 3f1c-uuid"));
}

TEST(PromotionPolicy, TooShortAReplayIsRejected) {
  PromotionEvidence e = promotable();
  e.replay.trials = 3;
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("3 trials per workload, fewer than the 100 required"));
}

TEST(PromotionPolicy, AGlobalWinWithoutAReplayIsNotPromoted) {
  PromotionEvidence e = promotable();
  e.replay.trials = 0;
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("no 100-trial replay was run"));
}

TEST(PromotionPolicy, AnUnconfirmedGainIsNotPromoted) {
  PromotionEvidence e = promotable();
  e.remeasured =
      gate(group("all", 1.002, 0.01, Verdict::kTie),
           {group("small", 1.0, 0.02, Verdict::kTie), group("large", 1.0, 0.02, Verdict::kTie)});
  e.replay.trials = 0;
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_NE(d.decision, Decision::kPromote) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("re-measurement on fresh samples is at +0.2 %"));
}

TEST(PromotionPolicy, ACorrectnessFailureIsRejectedNamingTheGate) {
  PromotionEvidence e = promotable();
  e.remeasured->both_correct = e.remeasured->b_correct = false;
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("re-measured gate saw a failure of B"));
  EXPECT_THAT(d.evidence[2], HasSubstr("a failure of B"));

  // Also when only the representative gate was run and B otherwise wins a regime there.
  PromotionEvidence early;
  early.representative = clear_win();
  early.representative->both_correct = early.representative->b_correct = false;
  const DecisionReport r = decide_promotion(early, PromotionRules{});
  EXPECT_EQ(r.decision, Decision::kReject) << r.reason;
  EXPECT_THAT(r.reason, HasSubstr("representative gate saw a failure of B"));
  EXPECT_THAT(r.reason, Not(HasSubstr("archive")));
}

TEST(PromotionPolicy, AFailureOfTheBaselineAloneDoesNotRejectTheChallenger) {
  // The retained candidate A fails somewhere (those workloads were left out of the timing): a
  // challenger that is correct everywhere and faster is still promoted, so a fix can replace it.
  PromotionEvidence e = promotable();
  for (auto* g : {&e.representative, &e.full, &e.remeasured}) {
    (*g)->a_correct = false;
    (*g)->both_correct = false;
  }
  const DecisionReport d = decide_promotion(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kPromote) << d.reason;
  EXPECT_THAT(d.evidence[1], HasSubstr("A (the baseline) failed on some workloads"));
}

/// The evidence of a fix that gains nothing: ties everywhere, replayed clean.
PromotionEvidence tied_fix() {
  PromotionEvidence e;
  const PairedGateResult ties =
      gate(group("all", 0.998, 0.004, Verdict::kTie),
           {group("small", 1.001, 0.01, Verdict::kTie), group("large", 0.995, 0.01, Verdict::kTie)},
           10, Verdict::kTie, 0.998);
  e.representative = ties;
  e.full = ties;
  e.replay.trials = 100;
  return e;
}

PromotionRules fix_rules() {
  PromotionRules rules;
  rules.fix = "the correction's wait on a summed counter";
  return rules;
}

TEST(PromotionPolicy, AFixThatCostsNoSpeedIsPromotedWithoutAGain) {
  const DecisionReport d = decide_promotion(tied_fix(), fix_rules());
  EXPECT_EQ(d.decision, Decision::kPromote) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("a fix (the correction's wait on a summed counter), not a gain"));
  EXPECT_THAT(d.reason, HasSubstr("-0.2 % [-0.6, 0.2] (tie)"));
  EXPECT_THAT(d.reason, HasSubstr("100-trial replay clean"));
  // The same evidence without --fix is no gain.
  EXPECT_EQ(decide_promotion(tied_fix(), PromotionRules{}).decision, Decision::kReject);
}

TEST(PromotionPolicy, AFixMustNotCostSpeed) {
  // An overall loss, however small.
  PromotionEvidence e = tied_fix();
  e.full->overall = group("all", 0.994, 0.003, Verdict::kLoss);
  DecisionReport d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("reject: the full distribution is a loss at -0.6 %"));
  EXPECT_THAT(d.reason, HasSubstr("so the fix (the correction's wait on a summed counter) is not "
                                  "promoted either"));
  // An overall estimate below the tolerance that the statistics still call a tie.
  e = tied_fix();
  e.full->overall = group("all", 0.975, 0.03, Verdict::kTie);
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("the full distribution is at -2.5 %"));
  // A regime below the tolerance, the overall a tie.
  e = tied_fix();
  e.full->groups[1] = group("large", 0.97, 0.02, Verdict::kTie);
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("regime 'large' is at -3.0 %"));
  // A loss on the re-measurement, where one ran.
  e = tied_fix();
  e.remeasured = e.full;
  e.remeasured->overall = group("all", 0.99, 0.004, Verdict::kLoss);
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("the re-measurement is a loss"));
  // A regime below the tolerance in the re-measured gate only.
  e = tied_fix();
  e.remeasured = e.full;
  e.remeasured->groups[0] = group("small", 0.96, 0.03, Verdict::kTie);
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("regime 'small' is at -4.0 % [-7.0, -1.0] in the re-measured gate"));
  // Stopped at the representative gate: rule 2's reason.
  e = tied_fix();
  e.full.reset();
  e.representative->groups[1] = group("large", 0.9, 0.02, Verdict::kLoss);
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("representative gate found regime 'large' a loss"));
}

TEST(PromotionPolicy, AFixDecidesNothingWorseThanWithoutIt) {
  // A regime-local win beside a regime below the tolerance is archived, --fix or not.
  PromotionEvidence e = tied_fix();
  e.full = gate(group("all", 1.004, 0.004, Verdict::kTie),
                {group("small", 1.08, 0.02, Verdict::kWin), group("large", 0.95, 0.01, Verdict::kLoss)});
  const DecisionReport plain = decide_promotion(e, PromotionRules{});
  const DecisionReport fixed = decide_promotion(e, fix_rules());
  EXPECT_EQ(plain.decision, Decision::kArchive) << plain.reason;
  EXPECT_EQ(fixed.decision, Decision::kArchive) << fixed.reason;
  EXPECT_THAT(fixed.reason, HasSubstr("regime-local win in 'small' +8.0 %"));
  EXPECT_THAT(fixed.reason, HasSubstr("regime 'large' is at -5.0 %"));
  EXPECT_THAT(fixed.reason, HasSubstr("so the fix (the correction's wait on a summed counter) is "
                                      "not promoted either"));
  // A fix that also gains is promoted by rule 2, its reason naming the fix.
  const DecisionReport gain = decide_promotion(promotable(), fix_rules());
  EXPECT_EQ(gain.decision, Decision::kPromote) << gain.reason;
  EXPECT_THAT(gain.reason, HasSubstr("re-measured +2.9 %"));
  EXPECT_THAT(gain.reason, HasSubstr("also a fix (the correction's wait on a summed counter)"));
}

TEST(PromotionPolicy, AFixNeedsACleanFullReplay) {
  PromotionEvidence e = tied_fix();
  e.replay.trials = 0;
  DecisionReport d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("within the tolerance in the gates but no 100-trial replay"));
  e = tied_fix();
  e.replay.failures = 2;
  e.replay.first_failure = "w3: trial 9: output mismatch";
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("2 failing trials"));
  e = tied_fix();
  e.full->both_correct = e.full->b_correct = false;
  d = decide_promotion(e, fix_rules());
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("full gate saw a failure of B"));
}

TEST(PromotionPolicy, CollapsingRegimeFailsTheRepresentativeGate) {
  const PromotionRules rules;
  EXPECT_TRUE(representative_gate_passes(clear_win(), rules));

  const PairedGateResult collapse =
      gate(group("all", 1.02, 0.01, Verdict::kWin),
           {group("small", 1.10, 0.02, Verdict::kWin), group("large", 0.70, 0.05, Verdict::kLoss)});
  EXPECT_FALSE(representative_gate_passes(collapse, rules));

  // No single regime a significant loss, but the whole set slower than the tolerance.
  const PairedGateResult slower =
      gate(group("all", 0.97, 0.02, Verdict::kTie),
           {group("small", 0.97, 0.03, Verdict::kTie), group("large", 0.97, 0.03, Verdict::kTie)});
  EXPECT_FALSE(representative_gate_passes(slower, rules));

  PairedGateResult wrong = clear_win();
  wrong.both_correct = wrong.b_correct = false;
  EXPECT_FALSE(representative_gate_passes(wrong, rules));

  // The flow stops there; the decision says why.
  PromotionEvidence e;
  e.representative =
      gate(group("all", 1.0, 0.01, Verdict::kTie),
           {group("small", 1.0, 0.02, Verdict::kTie), group("large", 0.70, 0.05, Verdict::kLoss)});
  const DecisionReport d = decide_promotion(e, rules);
  EXPECT_EQ(d.decision, Decision::kReject) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("representative gate found regime 'large' a loss at -30.0 %"));
}

TEST(PromotionPolicy, AFirstCandidateIsPromotedOnCorrectnessAndACleanReplay) {
  FirstCandidateEvidence e;
  e.workloads = 5;
  e.replay.trials = 100;
  const DecisionReport d = decide_first_candidate(e, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kPromote) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("first candidate: correct on all 5 workloads"));
}

TEST(PromotionPolicy, AFirstCandidateWithAFailureOrAShortOrFailingReplayIsRejected) {
  FirstCandidateEvidence failing;
  failing.workloads = 5;
  failing.replay.trials = 100;
  failing.failures = {"w3: INCORRECT_NUMERICAL: 2 elements"};
  DecisionReport d = decide_first_candidate(failing, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject);
  EXPECT_THAT(d.reason, HasSubstr("fails 1 of 5 workloads (first: w3: INCORRECT_NUMERICAL"));

  FirstCandidateEvidence replay_fails;
  replay_fails.workloads = 5;
  replay_fails.replay.trials = 100;
  replay_fails.replay.failures = 1;
  replay_fails.replay.first_failure = "w1 [ties]: INCORRECT_NUMERICAL: duplicate index";
  d = decide_first_candidate(replay_fails, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject);
  EXPECT_THAT(d.reason, HasSubstr("1 failing run in the 100-trial replay (first: w1 [ties]"));

  FirstCandidateEvidence short_replay;
  short_replay.workloads = 5;
  short_replay.replay.trials = 3;
  d = decide_first_candidate(short_replay, PromotionRules{});
  EXPECT_EQ(d.decision, Decision::kReject);
  EXPECT_THAT(d.reason, HasSubstr("3 trials per workload, fewer than the 100 required"));

  EXPECT_EQ(decide_first_candidate(FirstCandidateEvidence{}, PromotionRules{}).decision,
            Decision::kReject);
}

TEST(PromotionPolicy, DecisionNames) {
  EXPECT_EQ(decision_name(Decision::kPromote), "promote");
  EXPECT_EQ(decision_name(Decision::kArchive), "archive");
  EXPECT_EQ(decision_name(Decision::kReject), "reject");
}

}  // namespace
}  // namespace kh
