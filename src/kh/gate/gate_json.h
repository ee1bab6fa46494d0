// Gate results and their samples as JSON: what `kh gate --json` prints and what the store keeps
// (GateRecord::result / ::samples), so a stored decision can be re-read and its statistics
// re-derived from the raw samples. Readers are strict: a missing or mistyped field is an error
// naming it.
#pragma once

#include <vector>

#include "kh/core/json_io.h"
#include "kh/gate/paired_statistics.h"

namespace kh {

std::string_view objective_name(GateObjective o);  // "mean_latency", "mean_speedup"
/// Throws kh::Error naming the value and the allowed names.
GateObjective parse_objective(std::string_view name);

Json interval_json(const Interval& i);
Json paired_gate_json(const PairedGateResult& r);
PairedGateResult paired_gate_from_json(const Json& j);

/// Per workload: {"workload", "a_correct", "b_correct", "rounds": [{"a": [s...], "b": [s...]}]}.
Json paired_samples_json(const std::vector<WorkloadSamples>& samples);
std::vector<WorkloadSamples> paired_samples_from_json(const Json& j);

}  // namespace kh
