// What the store-reading verbs share: opening the store (importing the project's memory/ bundles
// the first time each is seen), naming a candidate on the command line, and turning stored
// evaluations into per-workload results.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kh/report/comparison.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {

struct StoreOptions {
  std::string dir = ".kh";  // --store
};

/// Adds --store to a verb.
void add_store_option(CLI::App* cmd, StoreOptions& o);

/// Opens the store and imports any memory bundle (<kh home>/memory/*.khb, or $KH_MEMORY_DIR;
/// KH_MEMORY_DIR="" turns it off) not imported yet, saying so on stderr.
std::unique_ptr<ArtifactStore> open_store(const StoreOptions& o);

/// The one candidate a name or hash prefix designates; an error lists the matches when several
/// do, or says none does.
CandidateRecord resolve_candidate(const ArtifactStore& store, const std::string& name_or_hash);

/// The newest evaluation of each workload: of the candidate's newest sweep when `sweep` is empty
/// and it has one, else of that sweep ("all": every evaluation of the candidate).
std::vector<EvaluationRecord> latest_per_workload(const ArtifactStore& store,
                                                  const CandidateRecord& c,
                                                  const std::string& sweep = "");

/// The sweep `latest_per_workload` reads for this candidate ("" when none applies).
std::string newest_sweep_of(const ArtifactStore& store, const CandidateRecord& c);

/// Per-workload results for comparisons and reports; `flaky` from the sweep's items, if any.
CandidateResults candidate_results(const ArtifactStore& store, const CandidateRecord& c,
                                   const std::vector<EvaluationRecord>& evaluations);

}  // namespace kh::cli
