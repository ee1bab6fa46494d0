// `kh promote`'s flow (DESIGN.md "Decisions"): representative gate -> full-distribution gate ->
// re-measurement of the winner on fresh samples -> high-trial replay -> exactly one decision.
// Each stage runs only when the previous one leaves the decision open; every stage's result is
// handed to the caller as soon as it is known (the CLI stores it), so a kill loses at most the
// stage in flight. Without a retained candidate the flow is correctness + replay
// (decide_first_candidate).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/gate/paired_run.h"
#include "kh/gate/promotion_policy.h"
#include "kh/gate/replay.h"
#include "kh/gate/representative_set.h"

namespace kh {

struct PromotionRequest {
  Definition definition;
  std::vector<Workload> workloads;     // the full distribution, dataset order
  std::optional<GateSide> retained;    // A; none: the definition's first candidate
  GateSide candidate;                  // B
  std::map<std::string, double> retained_latency;  // uuid -> seconds, for the representatives
  PairedRunOptions run;                // gates' measurement (order_seed varies per stage)
  GateStatistics statistics;
  GateObjective objective = GateObjective::kMeanLatency;
  PromotionRules rules;
  ReplayOptions replay;
  /// The representative gate, when the caller ran it already (choosing the best of a round).
  std::optional<PairedGateResult> representative;
};

/// A finished stage: "representative", "full", "remeasured" (gates) or "correctness". The
/// pointers are valid during the callback only.
struct PromotionStage {
  std::string name;
  std::vector<std::string> workloads;  // uuids the stage covered
  const PairedRun* run = nullptr;
  const PairedGateResult* result = nullptr;
};
using PromotionStageFn = std::function<void(const PromotionStage&)>;
/// Progress: a phase ("full gate: timing", "replay") and how far it is.
using PromotionProgressFn = std::function<void(const std::string& phase, int done, int total)>;

struct PromotionOutcome {
  std::optional<RepresentativeSet> representatives;
  PromotionEvidence evidence;
  std::optional<ReplayResult> replay;
  DecisionReport decision;
};

PromotionOutcome run_promotion(const PromotionRequest& request,
                               const PromotionStageFn& on_stage = {},
                               const PromotionProgressFn& progress = {});

/// The representative stage alone, exactly as run_promotion runs it (same workloads, groups and
/// seeds): with several candidates in a round, each is gated here first and the best goes on
/// (its result passed back as request.representative). Needs request.retained.
PairedGateResult run_representative_gate(const PromotionRequest& request,
                                         const PromotionStageFn& on_stage = {},
                                         const PromotionProgressFn& progress = {});

}  // namespace kh
