#include "kh/run/timed_trial.h"

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

TimedTrial run_timed_trial(MemoryBackend& backend, const CandidateLibrary& library,
                           const InputGenerator& generator, std::int64_t trial, TimingMethod method,
                           const TimingConfig& config, CallTimer& timer) {
  const Definition& def = generator.definition();
  const bool on_device = has_device_reference(backend, def);
  DrawnCallInputs call = generate_inputs_of_call(generator, trial, on_device);
  // No red zones: timing measures the candidate on plain buffers, as the official timer does.
  CallBuffers buffers(backend, def, generator.axes(), call.host, 0, call.draws);
  const auto& t = buffers.tensors();
  buffers.set_workspace(library.workspace_bytes(t.data(), static_cast<std::int32_t>(t.size())));

  TimedTrial result;
  result.timing = timer.time_trial(method, config, [&](std::string& why) {
    const int rc = library.call(t.data(), static_cast<std::int32_t>(t.size()), backend.stream(),
                                buffers.workspace(), buffers.workspace_bytes());
    if (rc) why = library.error_message();
    return rc;
  });

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

}  // namespace kh
