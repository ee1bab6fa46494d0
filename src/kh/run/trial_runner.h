// One trial of one workload on a loaded candidate: draw the inputs, compute the reference, call
// the candidate in the backend's memory and judge the result.
//
// Strict checks (the default): outputs poisoned before every call and red zones around every
// buffer; after the call, red zones intact and inputs unchanged; then, if the outputs passed, a
// second call on the same inputs (determinism: a bit difference is a warning) and a third after
// writing another trial's inputs to the same addresses (anti-caching: must match the reference
// for the new inputs). `official` applies FlashInfer-Bench's rules alone: uninitialised outputs,
// one call, the official infinity rule.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kh/check/check_result.h"
#include "kh/gen/input_generator.h"
#include "kh/run/candidate_library.h"
#include "kh/run/memory_backend.h"

namespace kh {

/// Trials of the anti-caching call are this far from the checked trial, so their inputs are new.
inline constexpr std::int64_t kAntiCachingTrialOffset = 1'000'003;

struct TrialOptions {
  bool official = false;
  bool red_zones = true;  // off under compute-sanitizer, which checks bounds itself
  // Judge with the CPU reference on host-drawn inputs even where a GPU reference could run
  // (slow; for cross-checking the GPU references).
  bool cpu_reference = false;
  // Judge with this oracle instead of the native references (the definition's PyTorch reference
  // in the Python worker); inputs are then drawn where the backend's memory is.
  const CandidateLibrary* oracle = nullptr;
};

/// Where a trial's wall time went (seconds), to find what makes high-trial validation slow.
struct TrialPhases {
  double inputs = 0;     // drawing both input sets' host parts (placeholders for device draws)
  double buffers = 0;    // allocating the call's buffers and filling them where they live
                         // (device draws, uploads, red zones, input digests), twice
  double reference = 0;  // computing the references' outputs
  double calls = 0;      // the candidate's calls, each with poisoning and the red-zone and
                         // input checks
  double checks = 0;     // judging outputs against the references (where they live, or on the
                         // host after bringing both there), and the determinism digests
};

struct TrialResult {
  CheckResult check;
  bool determinism_checked = false;
  bool deterministic = true;
  int calls = 0;
  TrialPhases phases;
};

/// Told just before and just after each candidate call (the worker reports them so that the
/// coordinator can enforce a per-call timeout).
struct CallObserver {
  std::function<void()> before_call = [] {};
  std::function<void()> after_call = [] {};
};

TrialResult run_trial(MemoryBackend& backend, const CandidateLibrary& library,
                      const InputGenerator& generator, std::int64_t trial,
                      const TrialOptions& options, const CallObserver& observer = {});

}  // namespace kh
