// A workload verdict as the store keeps it (store/records.h EvaluationRecord) and as `kh eval
// --json` prints its timing: the summary, every sample (columnar), the call's cost and, given
// machine ceilings, the floor and the fraction of it reached. One conversion for both, so what is
// printed is what is stored.
#pragma once

#include <optional>
#include <string>

#include "kh/roofline/ceilings.h"
#include "kh/run/evaluator.h"
#include "kh/store/records.h"

namespace kh {

/// Where a verdict was made.
struct VerdictContext {
  std::string candidate;  // CandidateRecord::hash
  std::string definition;
  std::string sweep;  // "" outside a sweep
  int attempt = 1;
  Json options;                             // evaluation_options_json(...)
  std::optional<MachineCeilings> ceilings;  // for the floor; resolve once with ceilings_for
};

/// {"backend","official","seed","variant","trials","reference"} of an evaluation.
Json evaluation_options_json(const EvalOptions& o);

/// The ceilings for a verdict's GPU: `given` if set, else those `kh ceilings` stored for the GPU
/// named in the verdict's environment, if any; none for a timing on the cpu backend (no floor).
/// Callers resolve once and pass the result on (it reads a file), rather than per record.
std::optional<MachineCeilings> ceilings_for(const WorkloadVerdict& v,
                                            const std::optional<MachineCeilings>& given);

/// The record of `v` (id left empty for the store to compute). The environment, when timed, is
/// returned through `environment` for the caller to put first.
EvaluationRecord evaluation_record(const WorkloadVerdict& v, const VerdictContext& ctx,
                                   std::optional<EnvironmentRecord>* environment);

/// The timing part of `kh eval --json`: the summary and every sample, the cost and, with
/// ceilings, the floor and fraction of floor; null when the verdict was not timed.
Json verdict_timing_json(const WorkloadVerdict& v, const std::optional<MachineCeilings>& ceilings);

}  // namespace kh
