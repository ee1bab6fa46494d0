#include "kh/run/resident_outputs.h"

#include <utility>

namespace kh {

ResidentOutputs::ResidentOutputs(MemoryBackend& backend, const Definition& def,
                                 const AxisValues& axes)
    : backend_(&backend), def_(&def) {
  shapes_.reserve(def.outputs.size());
  try {
    for (const auto& decl : def.outputs) {
      shapes_.push_back(def.shape_of(decl, axes));
      const std::size_t bytes = storage_bytes(decl.dtype, shape_numel(shapes_.back()));
      memory_.push_back(backend.allocate(bytes));
      backend.zero(memory_.back(), bytes);
      DLTensor t{};
      t.data = memory_.back();
      t.device = backend.device();
      t.dtype = dlpack_dtype(decl.dtype);
      t.ndim = static_cast<std::int32_t>(shapes_.back().size());
      t.shape = shapes_.back().data();
      tensors_.push_back(t);
    }
  } catch (...) {
    for (void* p : memory_) backend.release(p);
    throw;
  }
}

ResidentOutputs::~ResidentOutputs() {
  for (void* p : memory_) backend_->release(p);
}

// Moving a vector keeps its elements where they are, so the DLTensors' shape pointers stay valid.
ResidentOutputs::ResidentOutputs(ResidentOutputs&& other) noexcept
    : backend_(other.backend_),
      def_(other.def_),
      shapes_(std::move(other.shapes_)),
      memory_(std::exchange(other.memory_, {})),
      tensors_(std::move(other.tensors_)) {}

OutputSet ResidentOutputs::download() const {
  OutputSet result;
  for (std::size_t i = 0; i < def_->outputs.size(); ++i) {
    HostTensor t(def_->outputs[i].dtype, shapes_[i]);
    backend_->download(t.bytes(), memory_[i], t.nbytes());
    result.add(def_->outputs[i].name, std::move(t));
  }
  return result;
}

}  // namespace kh
