// A gate's measurement and judgement as the store keeps them and as the gate verbs print them.
#pragma once

#include <string>

#include "kh/cli/gate_options.h"
#include "kh/gate/paired_run.h"
#include "kh/gate/promotion_policy.h"
#include "kh/gate/replay.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {

/// Puts the run's environment (if any) and the gate record; returns the stored record.
GateRecord store_gate(ArtifactStore& store, const Definition& def, const std::string& a_hash,
                      const std::string& b_hash, const std::string& stage, const GateSetup& setup,
                      const PairedRun& run, const PairedGateResult& result);

/// The gate as text: overall objective, groups, and the workloads that are not ties (at most
/// `max_workloads` of them, slowest first), then the correctness failures.
std::string gate_text(const PairedGateResult& r, const PairedRun& run, int max_workloads = 12);

/// A gate as JSON for --json: the record's id and the judged result.
Json gate_report_json(const GateRecord& record, const PairedRun& run);

/// Keeps every replay run in the store as it finishes (one evaluation, its options marked
/// "stage": "replay") and recalls those an earlier replay of `candidate` finished with the same
/// trials, seed and variant: a killed `kh promote` continues its replay when run again with the
/// same --replay-seed. The callbacks refer to `store`, which must outlive the replay.
void keep_replay_in_store(ReplayOptions& replay, ArtifactStore& store, const Definition& def,
                          const std::string& candidate);

/// The decision as stored and printed.
Json decision_evidence_json(const DecisionReport& d);

}  // namespace kh::cli
