// Python callables behind the candidate interface: inside the Python worker (python/kh_worker.py,
// include/kh/python_worker.h) a Python candidate, or a definition's own PyTorch reference, is a
// CandidateLibrary whose entry calls back into Python. Everything around the call (buffers,
// poisoning, red zones, checks, timers) is the same code that serves CUDA candidates.
#pragma once

#include <memory>
#include <string>

#include "kh/python_worker.h"
#include "kh/run/candidate_library.h"
#include "kh/spec/definition.h"

namespace kh {

/// The callbacks the Python worker hands to kh_worker_main; all null in `kh worker`.
struct PythonHooks {
  kh_python_load_fn load = nullptr;
  kh_python_call_fn call = nullptr;
  kh_python_release_fn release = nullptr;
  bool present() const { return load && call && release; }
};

/// The candidate a python_candidate.json manifest describes (a build of a "python" or "triton"
/// candidate). kh::Error with Python's traceback when it does not import.
std::unique_ptr<CandidateLibrary> load_python_candidate(const PythonHooks& hooks,
                                                        const std::string& manifest,
                                                        const Definition& def);

/// The definition's `reference` code, value-returning as FlashInfer-Bench builds it: the oracle
/// of a definition without a native reference, and the `builtin:definition_reference` candidate.
std::unique_ptr<CandidateLibrary> load_python_reference(const PythonHooks& hooks,
                                                        const Definition& def);

/// While one exists, Python calls are timed calls (KH_PYTHON_CALL_TIMED): a value-returning
/// function's results are dropped instead of copied into the harness's outputs.
class PythonTimedScope {
 public:
  PythonTimedScope();
  ~PythonTimedScope();
  PythonTimedScope(const PythonTimedScope&) = delete;
  PythonTimedScope& operator=(const PythonTimedScope&) = delete;
};

}  // namespace kh
