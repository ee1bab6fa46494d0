// The supervisor: reads the history of a definition's rounds and says when the loop is stuck —
// a plateau, a cycle, a regression of the retained candidate, or gains that no longer clear the
// gate's minimum effect — and what to do about it. Pure: the caller records and acts on the
// findings (kh agent switches direction, surface or agent command; a person may be asked).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kh::ctl {

/// One closed round, oldest first in a history.
struct RoundRecord {
  enum class Decision { kPromote, kArchive, kReject, kFailed };  // kFailed: no candidate judged
  int round = 0;
  std::string state_signature;  // BottleneckState::signature() when the round started
  std::string direction;        // the knowledge-base direction it pursued
  Decision decision = Decision::kReject;
  std::optional<double> gain;  // the gate's relative gain of its best candidate (+ = faster)
  std::optional<double> retained_latency_seconds;  // the retained candidate's mean after it
};

enum class Signal { kPlateau, kCycle, kRegression, kDiminishingReturns };
enum class Recommendation {
  kSwitchDirection,    // the next direction of the knowledge base for this state
  kSwitchSurface,      // another route or kernel (a different implementation surface)
  kSwitchAgent,        // the next agent command (e.g. another model family)
  kIndependentReview,  // a fresh reviewer reads the kernel and the history
  kHighTrialReplay,    // re-measure the retained candidate before trusting its numbers
};

struct SupervisorFinding {
  Signal signal;
  Recommendation recommendation;
  std::string reason;
  std::vector<int> rounds;  // the rounds the finding rests on
};

std::string signal_name(Signal s);
std::string recommendation_name(Recommendation r);
std::string decision_name(RoundRecord::Decision d);
RoundRecord::Decision decision_from_name(const std::string& name, const std::string& where);

/// The findings on `history` (oldest first), most urgent first: a regression, then a cycle, a
/// plateau, diminishing returns. `min_effect` is the gate's minimum relative effect.
std::vector<SupervisorFinding> supervise(const std::vector<RoundRecord>& history,
                                         double min_effect);

}  // namespace kh::ctl
