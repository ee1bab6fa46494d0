// A candidate named on the command line, as `kh eval` and `kh sweep` take it: a folder with
// candidate.toml, optionally followed by `@NAME=value,NAME=value` (its compile-time params), or a
// builtin (`builtin:cpu_reference`, which needs the definition). Loading, building (through the
// cache) and its store record in one place.
#pragma once

#include <string>
#include <vector>

#include "kh/build/builder.h"
#include "kh/build/candidate.h"
#include "kh/store/records.h"

namespace kh {
class ArtifactStore;
}

namespace kh::cli {

struct ResolvedCandidate {
  Candidate candidate;  // for a builtin: name, definition and entry only
  ParamValues params;
  BuildResult build;
  bool builtin = false;
};

/// "dir@A=1,B=2" -> ("dir", {"A=1", "B=2"}); an entry after '@' without '=' is an error.
std::pair<std::string, std::vector<std::string>> split_params(const std::string& arg);

/// `arg` as described above; `params` (NAME=value) apply on top of any `@` params; `definition`
/// is required for builtins and, when given, must match a folder candidate's.
ResolvedCandidate resolve_candidate_arg(const std::string& arg,
                                        const std::vector<std::string>& params,
                                        const std::string& definition,
                                        const std::filesystem::path& cache);

/// A CUDA candidate on the cpu backend would be handed host memory and fail in confusing ways
/// (NaN outputs, illegal addresses); stop with a line that says which backend it needs.
void check_backend_fits(const ResolvedCandidate& c, const std::string& backend);

/// Puts the candidate in the store (sources and manifest as blobs; a builtin's hash covers its
/// name and definition) with a record of its build, and returns its record.
CandidateRecord candidate_record(ArtifactStore& store, const ResolvedCandidate& c);

}  // namespace kh::cli
