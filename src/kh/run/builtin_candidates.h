// Candidates implemented inside kh, run through the same worker, buffers and checks as built
// libraries. `builtin:cpu_reference` wraps the CPU reference of a definition behind the candidate
// ABI (host memory, cpu backend): it passes every workload by construction, so it proves the
// whole evaluation path end to end without a GPU and without a compiler.
#pragma once

#include <memory>
#include <string>

#include "kh/run/candidate_library.h"
#include "kh/spec/definition.h"

namespace kh {

inline constexpr const char* kBuiltinPrefix = "builtin:";
/// The definition's own PyTorch `reference` as a candidate; served by the Python worker.
inline constexpr const char* kDefinitionReferenceBuiltin = "builtin:definition_reference";

bool is_builtin_candidate(const std::string& name);
/// The builtin candidate `name` (e.g. "builtin:cpu_reference") for a definition; an error
/// listing the builtins if the name is unknown.
std::unique_ptr<CandidateLibrary> make_builtin_candidate(const std::string& name,
                                                         const Definition& def);

}  // namespace kh
