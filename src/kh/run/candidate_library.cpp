#include "kh/run/candidate_library.h"

#include <dlfcn.h>

#include "kh/core/error.h"

namespace kh {

CandidateLibrary::CandidateLibrary(const std::string& path, const std::string& entry)
    : entry_(entry) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) fail("{}: cannot load the candidate library: {}", path, dlerror());
  const auto fn = reinterpret_cast<kh_entry_fn>(dlsym(handle_, entry.c_str()));
  fn_ = fn;
  if (!fn) {
    dlclose(handle_);
    fail("{}: the entry symbol '{}' is not exported (declare it KH_EXPORT, i.e. extern \"C\")",
         path, entry);
  }
  workspace_fn_ =
      reinterpret_cast<kh_workspace_fn>(dlsym(handle_, (entry + "_workspace_bytes").c_str()));
  if (const auto error = reinterpret_cast<kh_error_fn>(dlsym(handle_, (entry + "_error").c_str())))
    error_fn_ = [error] {
      const char* m = error();
      return std::string(m ? m : "");
    };
}

CandidateLibrary::CandidateLibrary(std::string name, EntryFunction entry, ErrorFunction error,
                                   std::function<void()> on_release)
    : entry_(std::move(name)),
      fn_(std::move(entry)),
      error_fn_(std::move(error)),
      on_release_(std::move(on_release)) {}

CandidateLibrary::~CandidateLibrary() {
  if (on_release_) on_release_();
  if (handle_) dlclose(handle_);
}

int CandidateLibrary::call(const DLTensor* tensors, std::int32_t count, void* stream,
                           void* workspace, std::uint64_t workspace_bytes) const {
  return fn_(tensors, count, stream, workspace, workspace_bytes);
}

std::uint64_t CandidateLibrary::workspace_bytes(const DLTensor* tensors, std::int32_t count) const {
  return workspace_fn_ ? workspace_fn_(tensors, count) : 0;
}

std::string CandidateLibrary::error_message() const {
  return error_fn_ ? error_fn_() : "";
}

}  // namespace kh
