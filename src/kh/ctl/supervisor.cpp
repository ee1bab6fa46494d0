#include "kh/ctl/supervisor.h"

#include <algorithm>
#include <map>
#include <utility>

#include "kh/core/error.h"
#include "kh/ctl/thresholds.h"

namespace kh::ctl {
namespace {

using Decision = RoundRecord::Decision;

std::string round_list(const std::vector<int>& rounds) {
  std::string out;
  for (int r : rounds) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::optional<SupervisorFinding> regression(const std::vector<RoundRecord>& h) {
  std::optional<double> best;
  int best_round = 0;
  for (const auto& r : h)
    if (r.retained_latency_seconds && (!best || *r.retained_latency_seconds < *best)) {
      best = r.retained_latency_seconds;
      best_round = r.round;
    }
  const RoundRecord& last = h.back();
  if (!best || !last.retained_latency_seconds ||
      *last.retained_latency_seconds <= *best * (1 + kRegressionTolerance))
    return std::nullopt;
  return SupervisorFinding{
      Signal::kRegression,
      Recommendation::kHighTrialReplay,
      fmt::format("the retained candidate measures {:.3g} us after round {}, {:.1f}% above the "
                  "{:.3g} us of round {}",
                  *last.retained_latency_seconds * 1e6, last.round,
                  100 * (*last.retained_latency_seconds / *best - 1), *best * 1e6, best_round),
      {best_round, last.round}};
}

// The same direction tried again in the same state, without a promotion in between, within the
// window: the loop is going round.
std::optional<SupervisorFinding> cycle(const std::vector<RoundRecord>& h) {
  const std::size_t from = h.size() > kCycleWindowRounds ? h.size() - kCycleWindowRounds : 0;
  std::map<std::pair<std::string, std::string>, std::vector<int>> tried;
  for (std::size_t i = from; i < h.size(); ++i) {
    if (h[i].decision == Decision::kPromote) {
      tried.clear();  // a promotion changes what the state means
      continue;
    }
    auto& rounds = tried[{h[i].state_signature, h[i].direction}];
    rounds.push_back(h[i].round);
    if (rounds.size() >= 2)
      return SupervisorFinding{
          Signal::kCycle, Recommendation::kSwitchDirection,
          fmt::format("direction \"{}\" was tried {} times in state {} without a promotion "
                      "(rounds {})",
                      h[i].direction, rounds.size(), h[i].state_signature, round_list(rounds)),
          rounds};
  }
  return std::nullopt;
}

std::optional<SupervisorFinding> plateau(const std::vector<RoundRecord>& h) {
  std::vector<int> rounds;
  bool all_failed = true;
  for (auto it = h.rbegin(); it != h.rend() && it->decision != Decision::kPromote; ++it) {
    rounds.insert(rounds.begin(), it->round);
    all_failed = all_failed && it->decision == Decision::kFailed;
  }
  if (static_cast<int>(rounds.size()) < kPlateauRounds) return std::nullopt;
  if (all_failed)
    return SupervisorFinding{
        Signal::kPlateau, Recommendation::kSwitchAgent,
        fmt::format("{} rounds in a row ended without a judged candidate (rounds {})",
                    rounds.size(), round_list(rounds)),
        rounds};
  return SupervisorFinding{Signal::kPlateau, Recommendation::kSwitchSurface,
                           fmt::format("{} rounds in a row without a promotion (rounds {})",
                                       rounds.size(), round_list(rounds)),
                           rounds};
}

// The last rounds each found a gain, but none cleared the minimum effect: the direction's
// returns are used up.
std::optional<SupervisorFinding> diminishing(const std::vector<RoundRecord>& h, double min_effect) {
  if (static_cast<int>(h.size()) < kDiminishingRounds) return std::nullopt;
  std::vector<int> rounds;
  for (auto it = h.rbegin(); it != h.rbegin() + kDiminishingRounds; ++it) {
    if (!it->gain || *it->gain <= 0 || *it->gain >= min_effect) return std::nullopt;
    rounds.insert(rounds.begin(), it->round);
  }
  return SupervisorFinding{
      Signal::kDiminishingReturns, Recommendation::kSwitchSurface,
      fmt::format("the last {} rounds gained less than the minimum effect of {:.1f}% (rounds {})",
                  rounds.size(), 100 * min_effect, round_list(rounds)),
      rounds};
}

}  // namespace

std::string signal_name(Signal s) {
  switch (s) {
    case Signal::kPlateau:
      return "plateau";
    case Signal::kCycle:
      return "cycle";
    case Signal::kRegression:
      return "regression";
    case Signal::kDiminishingReturns:
      return "diminishing_returns";
  }
  return "unknown";
}

std::string recommendation_name(Recommendation r) {
  switch (r) {
    case Recommendation::kSwitchDirection:
      return "switch_direction";
    case Recommendation::kSwitchSurface:
      return "switch_surface";
    case Recommendation::kSwitchAgent:
      return "switch_agent";
    case Recommendation::kIndependentReview:
      return "independent_review";
    case Recommendation::kHighTrialReplay:
      return "high_trial_replay";
  }
  return "unknown";
}

std::string decision_name(Decision d) {
  switch (d) {
    case Decision::kPromote:
      return "promote";
    case Decision::kArchive:
      return "archive";
    case Decision::kReject:
      return "reject";
    case Decision::kFailed:
      return "failed";
  }
  return "unknown";
}

Decision decision_from_name(const std::string& name, const std::string& where) {
  for (Decision d : {Decision::kPromote, Decision::kArchive, Decision::kReject, Decision::kFailed})
    if (decision_name(d) == name) return d;
  fail("{}: unknown round decision \"{}\" (expected promote, archive, reject or failed)", where,
       name);
}

std::vector<SupervisorFinding> supervise(const std::vector<RoundRecord>& history,
                                         double min_effect) {
  std::vector<SupervisorFinding> out;
  if (history.empty()) return out;
  for (auto finding :
       {regression(history), cycle(history), plateau(history), diminishing(history, min_effect)})
    if (finding) out.push_back(std::move(*finding));
  // A loop that keeps cycling after switching directions needs other eyes.
  const bool cycling =
      std::any_of(out.begin(), out.end(), [](const auto& f) { return f.signal == Signal::kCycle; });
  const bool stuck = std::any_of(out.begin(), out.end(),
                                 [](const auto& f) { return f.signal == Signal::kPlateau; });
  if (cycling && stuck)
    out.push_back({Signal::kCycle,
                   Recommendation::kIndependentReview,
                   "cycling on a plateau: an independent review of the kernel and the history",
                   {}});
  return out;
}

}  // namespace kh::ctl
