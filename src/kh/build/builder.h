// Builds candidates into shared libraries, cached by content. The key is a SHA-256 over all that
// decides the library's bits: the kh ABI (version and header text), the language, entry, every
// source (path and content), flags, targets, param values, the base compiler flags and the
// compiler's identity (its --version output). An unchanged candidate is never recompiled.
//
// Cache layout: <cache_dir>/<key>/{libcandidate.so, build.log, build.json}; a Python candidate
// has its sources and python_candidate.json where the library would be. A build happens in
// <cache_dir>/<key>.tmp.<pid>.<n> and is renamed into place when complete, so a kill never leaves
// a half-written entry and two builds of the same key race harmlessly. Failed builds are not
// cached.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kh/build/candidate.h"

namespace kh {

struct BuildOptions {
  std::filesystem::path cache_dir = ".kh/builds";
  std::string nvcc = "nvcc";  // "nvcc" not in PATH falls back to find_nvcc()
  std::string cxx = "c++";
  std::chrono::seconds timeout{600};
  int jobs = 0;  // parallel builds in build_all; 0 = hardware threads
};

struct BuildResult {
  bool ok = false;
  bool cached = false;               // true: taken from the cache, no compiler ran
  std::string key;                   // hex sha256
  std::filesystem::path library;     // absolute path of libcandidate.so (when ok)
  std::string log;                   // the compiler's output (full; the reason on failure)
  double seconds = 0;                // wall time of this call
  std::vector<std::string> command;  // the compiler command that made the library
};

inline constexpr const char* kCandidateLibrary = "libcandidate.so";
/// A Python candidate's build: its sources and this manifest (entry file, function, calling
/// style, params), which stands where a library would; the Python worker loads it.
inline constexpr const char* kPythonCandidateManifest = "python_candidate.json";

/// Whether a built library path (or a worker's "library" field) names a Python candidate.
inline bool is_python_candidate_library(const std::string& library) {
  return std::filesystem::path(library).filename() == kPythonCandidateManifest;
}

class Builder {
 public:
  explicit Builder(BuildOptions options);

  const BuildOptions& options() const { return options_; }

  /// Hex SHA-256 of everything the library depends on. Throws kh::Error when `params` does not
  /// fit the candidate or a source cannot be read.
  std::string cache_key(const Candidate& c, const ParamValues& params) const;
  /// Builds (or finds in the cache) one candidate. A compiler failure gives ok == false with the
  /// compiler's log; invalid input (params, unreadable sources, kh headers not found) throws.
  BuildResult build(const Candidate& c, const ParamValues& params) const;
  /// Builds several candidates in parallel (options.jobs at a time); results in request order.
  /// All requests are validated before anything is built; requests with the same key are built
  /// once.
  std::vector<BuildResult> build_all(
      const std::vector<std::pair<const Candidate*, ParamValues>>& requests) const;

  /// The compiler command for a build writing `output` (exposed for tests and --dry-run style
  /// reporting).
  std::vector<std::string> command(const Candidate& c, const ParamValues& params,
                                   const std::filesystem::path& output) const;
  /// `<compiler> --version` for the candidate's language, run once per Builder.
  std::string compiler_identity(const std::string& language) const;

 private:
  struct IdentityCache;

  BuildResult build_with_key(const Candidate& c, const ParamValues& params,
                             const std::string& key) const;
  const std::string& compiler_for(const std::string& language) const;

  BuildOptions options_;
  std::shared_ptr<IdentityCache> identities_;
};

/// nvcc through PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin.
std::optional<std::filesystem::path> find_nvcc();

}  // namespace kh
