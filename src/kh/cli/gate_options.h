// What `kh noise`, `kh gate` and `kh promote` share: the flags of a paired measurement and its
// statistics, and turning them (with the store's noise floor for this GPU and timer) into the
// library's option structs. One definition of each flag, so the three verbs cannot drift apart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kh/cli/candidate_arg.h"
#include "kh/cli/eval_options.h"
#include "kh/gate/paired_run.h"
#include "kh/gate/representative_set.h"
#include "kh/spec/dataset.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {

struct GateCliOptions {
  EvalCliOptions e;
  int rounds = kDefaultGateRounds;
  int pairs = kDefaultGatePairsPerRound;
  int gate_warmup = kDefaultGateWarmup;
  std::string objective = "mean_latency";
  double min_effect = -1;  // < 0: from the stored noise floor, else the statistics' default
  double confidence = GateStatistics{}.confidence;
  double family_alpha = GateStatistics{}.family_alpha;
  std::uint64_t order_seed = 0;  // 0: drawn fresh and printed
};

/// --rounds, --pairs, --gate-warmup, --objective, --min-effect, --confidence, --alpha,
/// --order-seed and the evaluation flags (add_eval_cli_options).
void add_gate_cli_options(CLI::App* cmd, GateCliOptions& o);

struct GateSetup {
  PairedRunOptions run;
  GateStatistics statistics;
  GateObjective objective = GateObjective::kMeanLatency;
  std::string gpu;     // the GPU the gate runs on ("cpu" for the cpu backend)
  std::string method;  // timing method name
  std::string min_effect_source;  // "--min-effect", "noise floor <id>" or "default"
  std::optional<NoiseFloorRecord> floor;
};

/// Resolves the flags for `def`: the timing method (--timing; default cupti on cuda, wall on
/// cpu), the order seed, and the minimum effect (--min-effect, else the newest noise floor of
/// this definition, GPU and method in the store, else the default).
GateSetup resolve_gate_setup(GateCliOptions& o, const Definition& def, const ArtifactStore& store);

/// A resolved, built candidate as a gate side; an error naming it when it did not build.
GateSide gate_side(const ResolvedCandidate& c);

/// A stored candidate (by hash) rebuilt from its stored manifest and sources (written under
/// <store dir>/candidates/<hash>/), or the builtin it names. The rebuilt folder's hash is checked
/// to be the stored one, so the retained candidate gated against is exactly the promoted one.
struct StoredCandidate {
  CandidateRecord record;
  ResolvedCandidate resolved;
};
StoredCandidate rebuild_stored_candidate(ArtifactStore& store, const std::string& hash,
                                         const std::filesystem::path& cache);

/// The representative set of `def`'s dataset workloads, from the latencies of `baseline` stored
/// for this timing method.
RepresentativeSet dataset_representatives(const Dataset& ds, const Definition& def,
                                          const ArtifactStore& store,
                                          const CandidateRecord& baseline,
                                          const std::string& method);

/// Which workloads a gate measures: "all", "representative" (those of `rep`) or a JSONL file of
/// workloads of `def`.
std::vector<Workload> gate_workloads(const std::string& which, const Dataset& ds,
                                     const Definition& def, const RepresentativeSet& rep);

/// The baseline's stored latency per workload under this timing method (newest evaluation).
std::map<std::string, double> stored_latencies(const ArtifactStore& store, const CandidateRecord& c,
                                               const std::string& method);

}  // namespace kh::cli
