// A built candidate loaded into the worker: the shared library, its entry point and the optional
// workspace-size and error-message exports of the ABI (include/kh/abi.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kh/abi.h"

namespace kh {

class CandidateLibrary {
 public:
  /// dlopen(RTLD_NOW) the library and resolve `entry`; an unresolved symbol is an error (the
  /// caller reports it as COMPILE_ERROR, as FlashInfer-Bench does).
  CandidateLibrary(const std::string& path, const std::string& entry);
  /// A candidate implemented inside kh (see builtin_candidates.h); no library is loaded.
  using EntryFunction =
      std::function<int(const DLTensor*, std::int32_t, void*, void*, std::uint64_t)>;
  /// The message of the last failed call (error_message()).
  using ErrorFunction = std::function<std::string()>;
  CandidateLibrary(std::string name, EntryFunction entry, ErrorFunction error = {},
                   std::function<void()> on_release = {});
  ~CandidateLibrary();
  CandidateLibrary(const CandidateLibrary&) = delete;
  CandidateLibrary& operator=(const CandidateLibrary&) = delete;

  int call(const DLTensor* tensors, std::int32_t count, void* stream, void* workspace,
           std::uint64_t workspace_bytes) const;
  std::uint64_t workspace_bytes(const DLTensor* tensors, std::int32_t count) const;
  /// The candidate's message for its last failed call, or "".
  std::string error_message() const;
  const std::string& entry() const { return entry_; }

 private:
  void* handle_ = nullptr;
  std::string entry_;
  EntryFunction fn_;
  kh_workspace_fn workspace_fn_ = nullptr;
  ErrorFunction error_fn_;
  std::function<void()> on_release_;
};

}  // namespace kh
