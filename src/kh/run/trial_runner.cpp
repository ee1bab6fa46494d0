#include "kh/run/trial_runner.h"

#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "kh/check/checker.h"
#include "kh/core/error.h"
#include "kh/python_worker.h"
#include "kh/ref/cpu_reference.h"
#include "kh/run/call_buffers.h"
#include "kh/run/call_inputs.h"
#include "kh/run/device_reference.h"
#include "kh/run/output_screen.h"

namespace kh {
namespace {

CheckResult terminal_failure(EvalStatus status, std::string message) {
  CheckResult r;
  r.status = status;
  r.matched_ratio = 0;
  r.message = std::move(message);
  r.terminal = true;
  return r;
}

CheckResult runtime_error(std::string message) {
  return terminal_failure(EvalStatus::kRuntimeError, std::move(message));
}

// The verdict of a failed call: what a Python entry's status implies (python_worker.h), else a
// runtime error with the candidate's message.
CheckResult failed_call(int rc, const std::string& why) {
  switch (rc) {
    case KH_PYTHON_EXCEPTION:
      return runtime_error("the Python entry raised:\n" + why);
    case KH_PYTHON_WRONG_SHAPE:
      return terminal_failure(EvalStatus::kIncorrectShape, why);
    case KH_PYTHON_WRONG_DTYPE:
      return terminal_failure(EvalStatus::kIncorrectDtype, why);
    case KH_PYTHON_WRONG_COUNT:
      return runtime_error(why);  // FlashInfer-Bench: a wrong output count raises
    default:
      return runtime_error(
          fmt::format("the entry point returned status {}{}{}", rc, why.empty() ? "" : ": ", why));
  }
}

// Calls the candidate once; its outputs stay in `buffers`. Returns the failure, if any.
std::optional<CheckResult> call_once(MemoryBackend& backend, const CandidateLibrary& library,
                                     CallBuffers& buffers, const InputSet& inputs, bool strict,
                                     const CallObserver& observer) {
  if (strict) buffers.poison_outputs();
  const auto& t = buffers.tensors();
  observer.before_call();
  const int rc = library.call(t.data(), static_cast<std::int32_t>(t.size()), backend.stream(),
                              buffers.workspace(), buffers.workspace_bytes());
  try {
    backend.synchronize();
  } catch (const Error& e) {
    observer.after_call();
    return runtime_error(e.what());
  }
  observer.after_call();
  if (rc != KH_OK) return failed_call(rc, library.error_message());
  if (strict) {
    if (auto damage = buffers.damaged_red_zone()) return runtime_error(*damage);
    if (auto modified = buffers.modified_input(inputs)) return runtime_error(*modified);
  }
  return std::nullopt;
}

// A trial's reference outputs: resident where the backend computed them (a GPU reference or an
// oracle), or on the host (the CPU references); a host copy of resident ones is made only when
// a check needs it.
class TrialReference {
 public:
  explicit TrialReference(ResidentOutputs resident) : resident_(std::move(resident)) {}
  explicit TrialReference(OutputSet host) : host_(std::move(host)) {}

  const ResidentOutputs* resident() const { return resident_ ? &*resident_ : nullptr; }
  const OutputSet& host() {
    if (!host_) host_ = resident_->download();
    return *host_;
  }
  /// The outputs on the host; the resident copy, if any, goes with this object.
  OutputSet take_host() {
    host();
    return std::move(*host_);
  }

 private:
  std::optional<ResidentOutputs> resident_;
  std::optional<OutputSet> host_;
};

// Adds the wall time of its scope to a phase.
class PhaseClock {
 public:
  explicit PhaseClock(double& phase) : phase_(phase), start_(std::chrono::steady_clock::now()) {}
  ~PhaseClock() {
    phase_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

 private:
  double& phase_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

TrialResult run_trial(MemoryBackend& backend, const CandidateLibrary& library,
                      const InputGenerator& generator, std::int64_t trial,
                      const TrialOptions& options, const CallObserver& observer) {
  const Definition& def = generator.definition();
  const bool strict = !options.official;
  const CheckOptions check_options =
      official_options(def, options.official, generator.value_scale());
  TrialResult result;

  // On a GPU the inputs are drawn and the reference computed in device memory; elsewhere (or
  // for a definition without a GPU reference) both happen on the host.
  const bool on_device = options.oracle
                             ? backend.device().device_type == kDLCUDA
                             : !options.cpu_reference && has_device_reference(backend, def);
  const std::size_t red_zone = options.red_zones ? kRedZoneBytes : 0;
  TrialPhases& phases = result.phases;
  std::optional<PhaseClock> clock(phases.inputs);
  DrawnCallInputs call = generate_inputs_of_call(generator, trial, on_device);
  InputSet& inputs = call.host;
  clock.emplace(phases.buffers);
  CallBuffers buffers(backend, def, generator.axes(), inputs, red_zone, call.draws);
  clock.reset();
  auto reference_of = [&](const InputSet& host) {
    const PhaseClock timed(phases.reference);
    if (options.oracle)
      return TrialReference(
          compute_oracle_reference(backend, def, generator.axes(), buffers, *options.oracle));
    return on_device
               ? TrialReference(compute_device_reference(backend, def, generator.axes(), buffers))
               : TrialReference(run_cpu_reference(def, generator.axes(), host));
  };
  // Outputs that pass are judged where they live (output_screen.h); the others, and every
  // output under a policy the screens do not cover, are brought to the host with the reference.
  // A check that reads inputs (the top-k set check recomputes scores where a row's selection
  // differs) gets host copies of the inputs drawn on the device, but only then: the K cache is
  // 100 MB per call, and most rows select exactly the reference's set in another order.
  auto judge = [&](InputSet& host, const DeviceDraws& draws, TrialReference& reference) {
    const PhaseClock timed(phases.checks);
    if (const ResidentOutputs* resident = reference.resident())
      if (auto screened = screen_outputs(backend, def, buffers, *resident, check_options))
        return *screened;
    const OutputSet& expected = reference.host();
    const OutputSet outputs = buffers.download_outputs();
    if (!draws.empty() && check_reads_inputs(def, expected, outputs))
      for (const auto& [name, recipe] : draws) host.at(name) = buffers.download_input(name);
    return check_outputs(def, host, expected, outputs, check_options);
  };
  auto call_candidate = [&](const InputSet& host) {
    const PhaseClock timed(phases.calls);
    ++result.calls;
    return call_once(backend, library, buffers, host, strict, observer);
  };
  // Under the strict checks the reference is computed after the candidate's call, on inputs the
  // call is then known to have left unchanged, so its outputs never share the device with a
  // running candidate (which could otherwise find and copy them). The official rules check no
  // inputs, so there the reference comes first, as officially, and is brought to the host.
  std::optional<TrialReference> reference;
  if (!strict) reference.emplace(reference_of(inputs).take_host());
  const auto& t = buffers.tensors();
  buffers.set_workspace(library.workspace_bytes(t.data(), static_cast<std::int32_t>(t.size())));

  if (auto failure = call_candidate(inputs)) {
    result.check = *failure;
    return result;
  }
  if (strict) reference.emplace(reference_of(inputs));
  result.check = judge(inputs, call.draws, *reference);
  if (!strict || !result.check.passed()) return result;
  std::vector<std::uint64_t> first_digests;
  {
    const PhaseClock timed(phases.checks);
    first_digests = buffers.output_digests();
  }

  if (auto failure = call_candidate(inputs)) {
    result.check = *failure;
    result.check.message = "second call on the same inputs: " + result.check.message;
    return result;
  }
  result.determinism_checked = true;
  {
    const PhaseClock timed(phases.checks);
    result.deterministic = buffers.output_digests() == first_digests;
  }

  const std::int64_t fresh_trial = trial + kAntiCachingTrialOffset;
  clock.emplace(phases.inputs);
  DrawnCallInputs fresh_call = generate_inputs_of_call(generator, fresh_trial, on_device);
  InputSet& fresh = fresh_call.host;
  clock.emplace(phases.buffers);
  buffers.reupload_inputs(fresh, fresh_call.draws);
  clock.reset();
  reference.reset();  // one reference's outputs in memory at a time
  if (auto failure = call_candidate(fresh)) {
    result.check = *failure;
    result.check.message = "anti-caching call: " + result.check.message;
    return result;
  }
  TrialReference fresh_reference = reference_of(fresh);
  const CheckResult fresh_check = judge(fresh, fresh_call.draws, fresh_reference);
  if (!fresh_check.passed()) {
    result.check = fresh_check;
    result.check.message =
        "anti-caching: after new inputs were written to the same addresses, the outputs do not "
        "match the reference for them (does the candidate cache results by address?): " +
        fresh_check.message;
  }
  return result;
}

}  // namespace kh
