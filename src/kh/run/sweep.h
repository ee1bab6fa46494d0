// Sweeps: candidates judged on every workload of a definition, one worker per device, each result
// committed to the store as it arrives. Several candidates are interleaved per workload (the
// candidate that goes first rotates from workload to workload) so that they share machine
// conditions. A sweep is identified by its plan (sweep_plan_key): `resume` continues the newest
// unfinished sweep of the same plan, `retry_failed` re-runs the failed items of the newest one,
// counting attempts; an item that passes only on a retry is flagged flaky, never silently passed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kh/build/builder.h"
#include "kh/roofline/ceilings.h"
#include "kh/run/evaluator.h"
#include "kh/spec/definition.h"
#include "kh/spec/workload.h"
#include "kh/store/artifact_store.h"

namespace kh {

struct SweepCandidate {
  std::string label;       // for progress lines and tables
  CandidateRecord record;  // already in the store (cli::candidate_record puts it there)
  BuildResult build;       // a failed build makes each of its items a COMPILE_ERROR
  std::string entry;       // the entry symbol
};

struct SweepRequest {
  Definition definition;
  std::vector<Workload> workloads;  // in dataset order
  std::vector<SweepCandidate> candidates;
  EvalOptions eval;  // eval.device is ignored: see devices
  std::optional<MachineCeilings> ceilings;
  std::vector<int> devices{0};  // one worker thread per entry (cuda: the device it uses)
  bool resume = false;
  bool retry_failed = false;
};

struct SweepProgress {
  int done = 0, total = 0, passed = 0, failed = 0;
  double elapsed_seconds = 0;
  std::string candidate, workload;  // of the item just finished
};
using SweepProgressFn = std::function<void(const SweepProgress&)>;

struct SweepOutcome {
  SweepRecord sweep;
  bool continued = false;                 // an existing sweep was resumed or retried
  int ran = 0;                            // items run now
  int already_done = 0;                   // items skipped because an earlier run finished them
  int passed = 0, failed = 0, flaky = 0;  // over all items of the sweep, after this run
};

/// Hash of what makes two sweeps the same: definition, candidate hashes in order, workload uuids
/// in order, and the evaluation and timing options (not the devices).
std::string sweep_plan_key(const SweepRequest& request);

/// The sweep's items in execution order: workload-major, candidates rotated by workload index.
std::vector<SweepItem> plan_sweep_items(const std::string& sweep_id, const SweepRequest& request);

/// Runs (or continues) the sweep. Throws only for store or input errors; candidate failures are
/// results.
SweepOutcome run_sweep(ArtifactStore& store, const SweepRequest& request,
                       const SweepProgressFn& progress = {});

}  // namespace kh
