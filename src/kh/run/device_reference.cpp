#include "kh/run/device_reference.h"

#include "kh/ref/gpu/gpu_reference.h"

namespace kh {

bool has_device_reference(const MemoryBackend& backend, const Definition& def) {
  return backend.device().device_type == kDLCUDA && gpuref::can_run_on_device(def.name);
}

OutputSet run_device_reference(MemoryBackend& backend, const Definition& def,
                               const AxisValues& axes, const CallBuffers& buffers) {
  std::vector<gpuref::NamedDLTensor> inputs, outputs;
  for (std::size_t i = 0; i < buffers.input_count(); ++i)
    inputs.push_back({def.inputs[i].name, buffers.tensors()[i]});
  std::vector<Shape> shapes;
  std::vector<void*> memory;
  shapes.reserve(def.outputs.size());
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
    outputs.push_back({decl.name, t});
  }
  OutputSet result;
  try {
    gpuref::run_on_device(gpuref::ReferenceArgs(def.name, axes, inputs, outputs), backend.stream());
    backend.synchronize();
    for (std::size_t i = 0; i < def.outputs.size(); ++i) {
      HostTensor t(def.outputs[i].dtype, shapes[i]);
      backend.download(t.bytes(), memory[i], t.nbytes());
      result.add(def.outputs[i].name, std::move(t));
    }
  } catch (...) {
    for (void* p : memory) backend.release(p);
    throw;
  }
  for (void* p : memory) backend.release(p);
  return result;
}

}  // namespace kh
