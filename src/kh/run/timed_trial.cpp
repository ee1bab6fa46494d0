#include "kh/run/timed_trial.h"

#include <algorithm>

#include "kh/core/error.h"
#include "kh/run/call_buffers.h"
#include "kh/run/call_inputs.h"
#include "kh/run/device_reference.h"

namespace kh {
namespace {

// Inputs drawn on the device come back to the host for the cost model only when they are small:
// the models read indices, lengths and routing logits (14 MB at 14k MoE tokens), never the
// weights, caches or states, whose shapes are enough.
constexpr std::size_t kMaxCostInputBytes = std::size_t{16} << 20;

}  // namespace

TimedCalls run_timed_calls(MemoryBackend& backend,
                           const std::vector<const CandidateLibrary*>& libraries,
                           const InputGenerator& generator, std::int64_t trial, TimingMethod method,
                           int warmup, const std::vector<int>& order, InterleavedTimer& timer) {
  const Definition& def = generator.definition();
  const bool on_device = has_device_reference(backend, def);
  DrawnCallInputs call = generate_inputs_of_call(generator, trial, on_device);
  // No red zones: timing measures the candidate on plain buffers, as the official timer does.
  CallBuffers buffers(backend, def, generator.axes(), call.host, 0, call.draws);
  const auto& t = buffers.tensors();
  const auto n = static_cast<std::int32_t>(t.size());
  std::uint64_t workspace = 0;
  for (const auto* library : libraries)
    workspace = std::max(workspace, library->workspace_bytes(t.data(), n));
  buffers.set_workspace(workspace);

  std::vector<InterleavedTimer::Call> calls;
  for (const auto* library : libraries)
    calls.push_back([&, library](std::string& why) {
      const int rc = library->call(t.data(), n, backend.stream(), buffers.workspace(),
                                   buffers.workspace_bytes());
      if (rc) why = library->error_message();
      return rc;
    });
  TimedCalls result;
  result.timings = timer.time_interleaved(method, warmup, calls, order);

  for (const auto& [name, recipe] : call.draws) {
    HostTensor& host = call.host.at(name);
    if (host.nbytes() <= kMaxCostInputBytes) host = buffers.download_input(name);
  }
  try {
    result.cost = minimal_call_cost(def, generator.axes(), call.host);
  } catch (const Error& e) {
    result.cost_error = e.what();
  }
  return result;
}

TimedTrial run_timed_trial(MemoryBackend& backend, const CandidateLibrary& library,
                           const InputGenerator& generator, std::int64_t trial, TimingMethod method,
                           const TimingConfig& config, InterleavedTimer& timer) {
  check_timing_config(config);
  TimedCalls calls =
      run_timed_calls(backend, {&library}, generator, trial, method, config.warmup,
                      std::vector<int>(static_cast<std::size_t>(config.iterations), 0), timer);
  return {std::move(calls.timings.at(0)), std::move(calls.cost), std::move(calls.cost_error)};
}

}  // namespace kh
