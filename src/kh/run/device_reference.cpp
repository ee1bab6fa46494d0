#include "kh/run/device_reference.h"

#include "kh/core/error.h"
#include "kh/ref/gpu/gpu_reference.h"

namespace kh {
namespace {

// Outputs of the reference's own, in the backend's memory, zeroed; `run` gets the call's tensors
// (the buffers' inputs, then these outputs) and writes them.
template <typename Run>
ResidentOutputs reference_outputs(MemoryBackend& backend, const Definition& def,
                                  const AxisValues& axes, const CallBuffers& buffers, Run&& run) {
  ResidentOutputs outputs(backend, def, axes);
  std::vector<DLTensor> tensors(buffers.tensors().begin(),
                                buffers.tensors().begin() + buffers.input_count());
  tensors.insert(tensors.end(), outputs.tensors().begin(), outputs.tensors().end());
  run(tensors);
  backend.synchronize();
  return outputs;
}

}  // namespace

bool has_device_reference(const MemoryBackend& backend, const Definition& def) {
  return backend.device().device_type == kDLCUDA && gpuref::can_run_on_device(def.name);
}

ResidentOutputs compute_device_reference(MemoryBackend& backend, const Definition& def,
                                         const AxisValues& axes, const CallBuffers& buffers) {
  return reference_outputs(backend, def, axes, buffers, [&](const std::vector<DLTensor>& t) {
    std::vector<gpuref::NamedDLTensor> inputs, outputs;
    for (std::size_t i = 0; i < def.inputs.size(); ++i)
      inputs.push_back({def.inputs[i].name, t[i]});
    for (std::size_t i = 0; i < def.outputs.size(); ++i)
      outputs.push_back({def.outputs[i].name, t[def.inputs.size() + i]});
    gpuref::run_on_device(gpuref::ReferenceArgs(def.name, axes, inputs, outputs), backend.stream());
  });
}

ResidentOutputs compute_oracle_reference(MemoryBackend& backend, const Definition& def,
                                         const AxisValues& axes, const CallBuffers& buffers,
                                         const CandidateLibrary& oracle) {
  return reference_outputs(backend, def, axes, buffers, [&](const std::vector<DLTensor>& t) {
    const int rc =
        oracle.call(t.data(), static_cast<std::int32_t>(t.size()), backend.stream(), nullptr, 0);
    if (rc != KH_OK)
      fail("the reference of {} ({}) failed with status {}: {}", def.name, oracle.entry(), rc,
           oracle.error_message());
  });
}

OutputSet run_device_reference(MemoryBackend& backend, const Definition& def,
                               const AxisValues& axes, const CallBuffers& buffers) {
  return compute_device_reference(backend, def, axes, buffers).download();
}

}  // namespace kh
