// High-trial replay: the last stage before a promotion. The candidate is checked again with many
// more trials than a sweep uses, on input sets drawn from a fresh seed (not the ones it was
// developed and gated on), on every workload, and on every adversarial variant the definition's
// generator offers (exact top-k ties, extreme gates, ...). A bug that shows once in a hundred
// trials, like a top-k boundary tie handled wrongly, is found here rather than after promotion.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kh/gate/paired_run.h"

namespace kh {

/// Trials per workload on realistic inputs, and per workload and adversarial variant.
inline constexpr int kDefaultReplayTrials = 100;
inline constexpr int kDefaultReplayAdversarialTrials = 20;

struct ReplayRun {
  std::string workload;
  std::string variant;  // "" for realistic inputs
  int trials = 0;       // run (a failure that ends the workload stops early)
  bool passed = false;
  std::string status, message;
  bool skipped = false;  // the variant does not apply to the workload (message says why); passed
};

/// Where finished runs are kept (the CLI: the store, one evaluation per run, as each finishes), so
/// that a replay killed part-way continues where it stopped when run again with the same seed.
/// `recall` returns the run an earlier replay finished for this workload and these options (the
/// pass's trials, seed and variant), or nullopt; `record` keeps a run just finished.
using ReplayRecallFn =
    std::function<std::optional<ReplayRun>(const Workload&, const EvalOptions& pass)>;
using ReplayRecordFn =
    std::function<void(const Workload&, const EvalOptions& pass, const WorkloadVerdict&)>;

struct ReplayOptions {
  EvalOptions eval;  // worker and timeouts; eval.trials, eval.seed and eval.variant are set here
  int trials = kDefaultReplayTrials;
  int adversarial_trials = kDefaultReplayAdversarialTrials;  // 0: no adversarial variants
  std::uint64_t seed = 0;  // the fresh seed (the caller draws and records it)
  ReplayRecallFn recall;   // optional
  ReplayRecordFn record;   // optional
};

struct ReplayResult {
  std::uint64_t seed = 0;
  int trials = 0, adversarial_trials = 0;  // as asked
  std::vector<std::string> variants;       // adversarial variants replayed
  std::vector<ReplayRun> runs;             // workload-major, realistic first
  int recalled = 0;                        // runs an earlier, interrupted replay had finished
  int failures() const;                    // runs that did not pass
  int skipped() const;                     // (workload, variant) pairs the variant cannot draw
  std::string first_skip() const;          // "uuid [variant]: why", or ""
  std::string first_failure() const;       // "uuid [variant]: STATUS: message", or ""
  int min_realistic_trials() const;        // fewest trials a realistic run had (passing or not)
};

/// The replay as stored with a decision: seeds, counts and the failing runs.
Json replay_json(const ReplayResult& r);

using ReplayProgressFn = std::function<void(int done, int total, const std::string& workload)>;

ReplayResult run_replay(const Definition& def, const std::vector<Workload>& workloads,
                        const GateSide& candidate, const ReplayOptions& options,
                        const ReplayProgressFn& progress = {});

}  // namespace kh
