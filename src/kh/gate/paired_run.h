// The measurement side of a paired gate: candidate A (baseline or retained) and B (challenger)
// are first checked for correctness on every workload, then timed in one worker on the same
// inputs: in each round the workloads come in a fresh random order, and on each workload the
// pairs of calls come in random A/B order (a coin per pair), after an L2 flush each (cuda). Every
// round draws a new input set for the workload (trial first_input_trial + round), the same for
// both. The result feeds judge_paired (paired_statistics.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kh/gate/paired_statistics.h"
#include "kh/run/evaluator.h"

namespace kh {

/// A built candidate as the worker loads it.
struct GateSide {
  std::string label;    // for messages: the candidate's name
  std::string library;  // built library path, or "builtin:..."
  std::string entry;    // entry symbol (a builtin: the definition)
};

/// Defaults of a gate's measurement, in one place.
inline constexpr int kDefaultGateRounds = 8;
inline constexpr int kDefaultGatePairsPerRound = 10;
inline constexpr int kDefaultGateWarmup = 3;

struct PairedRunOptions {
  EvalOptions eval;  // worker, seed, correctness trials (eval.trials) and timeouts; eval.timing is
                     // ignored (method below)
  TimingMethod method = TimingMethod::kCupti;
  int rounds = kDefaultGateRounds;
  int pairs_per_round = kDefaultGatePairsPerRound;  // timed calls per candidate per round
  int warmup = kDefaultGateWarmup;                  // untimed calls per candidate per round
  std::uint64_t order_seed = 1;  // workload order per round and A/B order per pair
  int first_input_trial = 0;     // input set of round 0; a re-measurement starts past the last
  bool same_candidate = false;   // A/A: B is A, checked once
};

struct PairedRunProgress {
  std::string phase;  // "correctness of A", "correctness of B", "timing"
  int done = 0, total = 0;
  std::string workload;
};
using PairedRunProgressFn = std::function<void(const PairedRunProgress&)>;

struct PairedRun {
  /// One entry per workload, in the given order. A workload where A or B failed a correctness
  /// trial (or the paired timing failed) has no rounds and the flag of the failing side false.
  std::vector<WorkloadSamples> samples;
  std::vector<WorkloadVerdict> a_verdicts, b_verdicts;  // correctness, per workload
  std::vector<std::string> failures;  // "B on <uuid>: INCORRECT_NUMERICAL: message", in order
  Json environment;                   // of the timing worker, or null
  PairedRunOptions options;           // as run (seeds and input trials, to reproduce it)
};

/// Correctness of one candidate on every workload (eval.trials each), in its own worker with no
/// peer loaded; eval.timing is ignored.
std::vector<WorkloadVerdict> check_correctness(const Definition& def,
                                               const std::vector<Workload>& workloads,
                                               const GateSide& side, EvalOptions eval,
                                               const std::string& phase,
                                               const PairedRunProgressFn& progress = {});

PairedRun run_paired(const Definition& def, const std::vector<Workload>& workloads,
                     const GateSide& a, const GateSide& b, const PairedRunOptions& options,
                     const PairedRunProgressFn& progress = {});

/// Judges a run: the workloads that were timed, groups restricted to them (a group left empty is
/// dropped); a_correct / b_correct are false when that side failed on any workload. A run with no
/// timed workload gives an empty result (overall estimate 1).
PairedGateResult judge_run(const PairedRun& run, const std::vector<WorkloadGroup>& groups,
                           GateObjective objective, const GateStatistics& stats);

}  // namespace kh
