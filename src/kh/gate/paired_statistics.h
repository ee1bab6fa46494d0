// Statistics of a paired gate: per-workload speedups of B over A with intervals that respect the
// pairing and the drift between rounds, the distribution-level objective with an interval that
// resamples within workloads (workloads are fixed, not sampled), and win / tie / loss per workload
// and per group of workloads (regimes) against a minimum effect, with family-wise error control
// (Holm) so an A/A gate over 128 workloads does not report spurious losses.
//
// Speedup = latency A / latency B (> 1: B is faster). Everything is computed on log speedups. The
// latency of a candidate on a workload is the geometric mean over rounds of the round's
// interquartile mean (its samples less the lowest and highest quarter, averaged); every bootstrap
// replicate applies that same rule to its resample, and its replicates stay centred on the
// estimate (those of a round median do not on two-mode timings: paired_statistics.cpp says why).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kh/gate/paired_samples.h"

namespace kh {

/// The statistical knobs of a gate, with their defaults in one place.
struct GateStatistics {
  int resamples = 2000;           // bootstrap replicates
  double confidence = 0.95;       // two-sided interval level
  double family_alpha = 0.05;     // family-wise error rate of the win/loss calls (Holm)
  double min_effect = 0.01;       // a win or loss must exceed this relative speed change
  std::uint64_t seed = 20260501;  // resampling is deterministic for a given seed
};

/// How a distribution of workloads is scored.
enum class GateObjective {
  kMeanLatency,  // sum over workloads of A's latency / sum of B's (the seed system's metric)
  kMeanSpeedup,  // mean over workloads of per-workload speedups (the contest's score)
};

enum class Verdict { kWin, kTie, kLoss };
std::string_view verdict_name(Verdict v);  // "win", "tie", "loss"

struct Interval {
  double estimate = 1;  // speedup
  double lo = 1, hi = 1;
};

struct WorkloadGate {
  std::string workload;
  Interval speedup;
  double p_win = 1, p_loss = 1;     // one-sided p-values of "no win beyond min_effect" / "no loss"
  Verdict verdict = Verdict::kTie;  // after Holm over the workloads of the gate
};

struct GroupGate {
  std::string name;                    // a regime label, or "all"
  std::vector<std::size_t> workloads;  // indices into the gate's workloads
  Interval objective;                  // the objective over those workloads, as a speedup
  double p_win = 1, p_loss = 1;
  Verdict verdict = Verdict::kTie;  // after Holm over the groups
};

struct PairedGateResult {
  GateObjective objective = GateObjective::kMeanLatency;
  std::vector<WorkloadGate> workloads;
  std::vector<GroupGate> groups;  // the named groups given, in order
  GroupGate overall;              // every workload
  bool both_correct = true;       // every workload correct for A and for B (a_correct && b_correct)
  bool a_correct = true;          // every workload correct for A (the baseline)
  bool b_correct = true;          // every workload correct for B (the challenger)
};

struct WorkloadGroup {
  std::string name;
  std::vector<std::string> workloads;  // uuids
};

/// Judges B against A. `groups` (e.g. regimes) may leave workloads out; `overall` uses all.
/// Throws kh::Error on a workload without rounds, an empty or unequal a/b round, or a latency
/// that is not positive and finite.
PairedGateResult judge_paired(const std::vector<WorkloadSamples>& samples,
                              const std::vector<WorkloadGroup>& groups, GateObjective objective,
                              const GateStatistics& stats);

/// Replicates per Holm step: a gate over m workloads uses at least this many times m / alpha
/// bootstrap replicates, so that the smallest p-value (1 / (R + 1)) can pass Holm's first step.
inline constexpr double kReplicatesPerHolmStep = 2;
/// The replicates a gate over `workloads` uses: max(stats.resamples, the Holm minimum above).
int replicates_for(const GateStatistics& stats, std::size_t workloads);

/// Holm's step-down adjustment: which of these one-sided p-values are rejected at family-wise
/// level alpha.
std::vector<bool> holm_rejections(const std::vector<double>& p_values, double alpha);

}  // namespace kh
