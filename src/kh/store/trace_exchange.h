// FlashInfer-Bench traces in and out of the store. Export writes one trace line per evaluation
// (the official JSONL: definition, workload, solution, evaluation). A reference latency is written
// only when a baseline candidate is named, and then the trace states which candidate that was
// (correctness.extra.reference_timed), because the official field does not say what was timed.
// Import records each trace with a solution and an evaluation as an evaluation of a candidate
// named after the solution, keeping the reference latency and what the trace says it was.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "kh/store/artifact_store.h"

namespace kh {

struct TraceExportOptions {
  std::optional<CandidateRecord> baseline;  // its latency becomes reference_latency_ms
  std::vector<EvaluationRecord> baseline_evaluations;
};

/// Writes `evaluations` as trace lines; returns how many were written. Workloads must be in the
/// store (they are whenever the evaluation was made by kh).
int export_traces(const ArtifactStore& store, const std::vector<EvaluationRecord>& evaluations,
                  const TraceExportOptions& options, std::ostream& out);

struct TraceImportStats {
  int lines = 0;
  int evaluations = 0;         // recorded (new or already present)
  int without_evaluation = 0;  // workload-only lines: the workload is recorded, nothing else
};

/// Reads trace JSONL from `in` (`source` names it in errors and in the records).
TraceImportStats import_traces(ArtifactStore& store, std::istream& in, const std::string& source);

}  // namespace kh
