#include "kh/run/device_reference.h"

#include "kh/core/error.h"
#include "kh/ref/gpu/gpu_reference.h"

namespace kh {
namespace {

// Outputs of the reference's own, in the backend's memory, zeroed; `run` gets the call's tensors
// (the buffers' inputs, then these outputs) and writes them; they come back to the host.
template <typename Run>
OutputSet reference_outputs(MemoryBackend& backend, const Definition& def, const AxisValues& axes,
                            const CallBuffers& buffers, Run&& run) {
  std::vector<DLTensor> tensors(buffers.tensors().begin(),
                                buffers.tensors().begin() + buffers.input_count());
  std::vector<Shape> shapes;
  std::vector<void*> memory;
  shapes.reserve(def.outputs.size());
  auto release = [&] {
    for (void* p : memory) backend.release(p);
  };
  try {
    for (const auto& decl : def.outputs) {
      shapes.push_back(def.shape_of(decl, axes));
      const std::size_t bytes = storage_bytes(decl.dtype, shape_numel(shapes.back()));
      memory.push_back(backend.allocate(bytes));
      backend.zero(memory.back(), bytes);
      DLTensor t{};
      t.data = memory.back();
      t.device = backend.device();
      t.dtype = dlpack_dtype(decl.dtype);
      t.ndim = static_cast<std::int32_t>(shapes.back().size());
      t.shape = shapes.back().data();
      tensors.push_back(t);
    }
    run(tensors);
    backend.synchronize();
    OutputSet result;
    for (std::size_t i = 0; i < def.outputs.size(); ++i) {
      HostTensor t(def.outputs[i].dtype, shapes[i]);
      backend.download(t.bytes(), memory[i], t.nbytes());
      result.add(def.outputs[i].name, std::move(t));
    }
    release();
    return result;
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace

bool has_device_reference(const MemoryBackend& backend, const Definition& def) {
  return backend.device().device_type == kDLCUDA && gpuref::can_run_on_device(def.name);
}

OutputSet run_device_reference(MemoryBackend& backend, const Definition& def,
                               const AxisValues& axes, const CallBuffers& buffers) {
  return reference_outputs(backend, def, axes, buffers, [&](const std::vector<DLTensor>& t) {
    std::vector<gpuref::NamedDLTensor> inputs, outputs;
    for (std::size_t i = 0; i < def.inputs.size(); ++i) inputs.push_back({def.inputs[i].name, t[i]});
    for (std::size_t i = 0; i < def.outputs.size(); ++i)
      outputs.push_back({def.outputs[i].name, t[def.inputs.size() + i]});
    gpuref::run_on_device(gpuref::ReferenceArgs(def.name, axes, inputs, outputs),
                          backend.stream());
  });
}

OutputSet run_oracle_reference(MemoryBackend& backend, const Definition& def,
                               const AxisValues& axes, const CallBuffers& buffers,
                               const CandidateLibrary& oracle) {
  return reference_outputs(backend, def, axes, buffers, [&](const std::vector<DLTensor>& t) {
    const int rc = oracle.call(t.data(), static_cast<std::int32_t>(t.size()), backend.stream(),
                               nullptr, 0);
    if (rc != KH_OK)
      fail("the reference of {} ({}) failed with status {}: {}", def.name, oracle.entry(), rc,
           oracle.error_message());
  });
}

}  // namespace kh
