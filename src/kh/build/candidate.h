// A candidate: a folder with candidate.toml naming a solution of one definition, how to build it
// (language, sources, entry point "file::symbol", flags, CUDA targets) and its compile-time knobs
// ([params] NAME = [allowed values], passed to the compiler as -DNAME=value).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kh/spec/solution.h"

namespace kh {

struct ParamSpec {
  std::string name;
  std::vector<std::string>
      values;  // allowed values as text (ints, bools, strings); first = default
};
using ParamValues = std::map<std::string, std::string>;

struct Candidate {
  std::filesystem::path dir;  // absolute folder of candidate.toml
  std::string name, definition, author, description;
  std::string language;              // "cuda" | "cpp" | "python" | "triton"
  std::vector<std::string> sources;  // relative to dir, as written; headers included
  EntryPoint entry;
  std::vector<std::string> flags, targets;  // targets: cuda only, default {"sm_90a"}
  std::vector<ParamSpec> params;            // sorted by name
  // Python candidates: true (FlashInfer-Bench's default) when the entry writes its outputs into
  // tensors it is given after the inputs, false when it returns them.
  bool destination_passing_style = true;
  std::filesystem::path manifest;           // the toml file it was read from, for messages
};

inline constexpr const char* kCandidateManifest = "candidate.toml";
inline constexpr const char* kDefaultCudaTarget = "sm_90a";

/// Reads a candidate from its folder (path/candidate.toml) or from the toml file itself. Errors
/// name the file, the field and the value ("c/candidate.toml: build.language: expected ...").
Candidate load_candidate(const std::filesystem::path& path);

/// The first allowed value of each param.
ParamValues default_params(const Candidate& c);
/// Applies "NAME=value" overrides to the defaults. An unknown name, a value outside the allowed
/// list or a name given twice is an error that lists what is allowed.
ParamValues resolve_params(const Candidate& c, const std::vector<std::string>& overrides);
/// Checks that `values` gives every param of `c` an allowed value and names no other.
void check_params(const Candidate& c, const ParamValues& values);

/// "python" and "triton": run by the Python worker, never compiled.
bool is_python_language(const std::string& language);
/// True for sources handed to the compiler (.cu for cuda; .cpp/.cc/.cxx/.c for both; .py for a
/// Python candidate); other sources (headers, data) only take part in the build's content key.
bool is_compiled_source(const std::string& language, const std::string& path);
/// "sm_90a" -> "-gencode=arch=compute_90a,code=sm_90a"; a malformed target is an error prefixed
/// by `where`.
std::string cuda_gencode_flag(const std::string& target, const std::string& where);

}  // namespace kh
