// The supervisor on synthetic round histories: each signal is found where it is and not where it
// is not, with the recommendation the controller acts on.
#include <gtest/gtest.h>

#include <algorithm>

#include "kh/ctl/supervisor.h"

namespace kh::ctl {
namespace {

using D = RoundRecord::Decision;
constexpr double kMinEffect = 0.01;

RoundRecord round(int n, const char* state, const char* direction, D decision,
                  std::optional<double> gain = std::nullopt,
                  std::optional<double> retained_us = std::nullopt) {
  RoundRecord r;
  r.round = n;
  r.state_signature = state;
  r.direction = direction;
  r.decision = decision;
  r.gain = gain;
  if (retained_us) r.retained_latency_seconds = *retained_us * 1e-6;
  return r;
}

bool has(const std::vector<SupervisorFinding>& f, Signal s, Recommendation r) {
  return std::any_of(f.begin(), f.end(),
                     [&](const auto& x) { return x.signal == s && x.recommendation == r; });
}

TEST(Supervisor, HealthyHistoryHasNoFinding) {
  const std::vector<RoundRecord> h = {
      round(1, "memory_bound@k", "a", D::kPromote, 0.08, 10.0),
      round(2, "latency_bound@k", "b", D::kReject, -0.01, 10.0),
      round(3, "latency_bound@k", "c", D::kPromote, 0.05, 9.5),
  };
  EXPECT_TRUE(supervise(h, kMinEffect).empty());
  EXPECT_TRUE(supervise({}, kMinEffect).empty());
}

TEST(Supervisor, PlateauAfterRoundsWithoutPromotion) {
  std::vector<RoundRecord> h = {round(1, "s", "a", D::kPromote, 0.1, 10.0),
                                round(2, "s", "b", D::kReject), round(3, "s", "c", D::kArchive)};
  EXPECT_FALSE(has(supervise(h, kMinEffect), Signal::kPlateau, Recommendation::kSwitchSurface));
  h.push_back(round(4, "s", "d", D::kReject));
  const auto f = supervise(h, kMinEffect);
  ASSERT_TRUE(has(f, Signal::kPlateau, Recommendation::kSwitchSurface));
  EXPECT_EQ(f[0].rounds, (std::vector<int>{2, 3, 4}));
}

TEST(Supervisor, RoundsThatJudgedNothingAskForAnotherAgent) {
  const std::vector<RoundRecord> h = {round(1, "s", "a", D::kFailed),
                                      round(2, "s", "b", D::kFailed),
                                      round(3, "s", "c", D::kFailed)};
  EXPECT_TRUE(has(supervise(h, kMinEffect), Signal::kPlateau, Recommendation::kSwitchAgent));
}

TEST(Supervisor, CycleIsTheSameDirectionInTheSameStateWithoutAPromotionBetween) {
  std::vector<RoundRecord> h = {round(1, "s", "a", D::kReject), round(2, "s", "b", D::kReject)};
  EXPECT_FALSE(has(supervise(h, kMinEffect), Signal::kCycle, Recommendation::kSwitchDirection));
  h.push_back(round(3, "s", "a", D::kArchive));
  const auto f = supervise(h, kMinEffect);
  ASSERT_TRUE(has(f, Signal::kCycle, Recommendation::kSwitchDirection));
  EXPECT_TRUE(has(f, Signal::kPlateau, Recommendation::kSwitchSurface));
  EXPECT_TRUE(has(f, Signal::kCycle, Recommendation::kIndependentReview))
      << "cycling on a plateau asks for other eyes";

  // Another state, or a promotion in between, is not a cycle.
  const std::vector<RoundRecord> moved = {round(1, "s", "a", D::kReject),
                                          round(2, "t", "a", D::kReject)};
  EXPECT_FALSE(has(supervise(moved, kMinEffect), Signal::kCycle, Recommendation::kSwitchDirection));
  const std::vector<RoundRecord> promoted = {round(1, "s", "a", D::kReject),
                                             round(2, "s", "b", D::kPromote, 0.1),
                                             round(3, "s", "a", D::kReject)};
  EXPECT_FALSE(
      has(supervise(promoted, kMinEffect), Signal::kCycle, Recommendation::kSwitchDirection));
}

TEST(Supervisor, RegressionOfTheRetainedCandidateAsksForAReplay) {
  const std::vector<RoundRecord> h = {round(1, "s", "a", D::kPromote, 0.1, 10.0),
                                      round(2, "s", "b", D::kPromote, 0.05, 9.5),
                                      round(3, "s", "c", D::kReject, std::nullopt, 9.9)};
  const auto f = supervise(h, kMinEffect);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].signal, Signal::kRegression) << "the most urgent finding comes first";
  EXPECT_EQ(f[0].recommendation, Recommendation::kHighTrialReplay);
  EXPECT_EQ(f[0].rounds, (std::vector<int>{2, 3}));
  // Within the tolerance (2 %): noise, not a regression.
  const std::vector<RoundRecord> noise = {round(1, "s", "a", D::kPromote, 0.1, 10.0),
                                          round(2, "s", "b", D::kReject, std::nullopt, 10.1)};
  EXPECT_FALSE(
      has(supervise(noise, kMinEffect), Signal::kRegression, Recommendation::kHighTrialReplay));
}

TEST(Supervisor, DiminishingReturnsAreGainsBelowTheMinimumEffect) {
  const std::vector<RoundRecord> h = {round(1, "s", "a", D::kPromote, 0.12),
                                      round(2, "s", "b", D::kArchive, 0.006),
                                      round(3, "s", "c", D::kArchive, 0.004)};
  const auto f = supervise(h, kMinEffect);
  EXPECT_TRUE(has(f, Signal::kDiminishingReturns, Recommendation::kSwitchSurface));
  const std::vector<RoundRecord> losses = {round(1, "s", "a", D::kReject, -0.02),
                                           round(2, "s", "b", D::kReject, -0.01)};
  EXPECT_FALSE(has(supervise(losses, kMinEffect), Signal::kDiminishingReturns,
                   Recommendation::kSwitchSurface))
      << "losses are not diminishing returns";
}

TEST(Supervisor, NamesRoundTrip) {
  for (D d : {D::kPromote, D::kArchive, D::kReject, D::kFailed})
    EXPECT_EQ(decision_from_name(decision_name(d), "here"), d);
  EXPECT_EQ(signal_name(Signal::kDiminishingReturns), "diminishing_returns");
  EXPECT_EQ(recommendation_name(Recommendation::kHighTrialReplay), "high_trial_replay");
}

}  // namespace
}  // namespace kh::ctl
