// A definition's outputs in a backend's memory, owned: where a reference computed them on the
// call's own input buffers. They stay there so that a candidate's outputs can be screened against
// them without copies (element_screen.h); download() brings them to the host when a check needs
// them there.
#pragma once

#include <cstddef>
#include <vector>

#include <dlpack/dlpack.h>

#include "kh/gen/input_set.h"
#include "kh/run/memory_backend.h"
#include "kh/spec/definition.h"

namespace kh {

class ResidentOutputs {
 public:
  /// Allocates every declared output of `def` at `axes`, zeroed.
  ResidentOutputs(MemoryBackend& backend, const Definition& def, const AxisValues& axes);
  ~ResidentOutputs();
  ResidentOutputs(ResidentOutputs&& other) noexcept;
  ResidentOutputs(const ResidentOutputs&) = delete;
  ResidentOutputs& operator=(const ResidentOutputs&) = delete;
  ResidentOutputs& operator=(ResidentOutputs&&) = delete;

  /// The outputs in definition order, as DLTensors in the backend's memory.
  const std::vector<DLTensor>& tensors() const { return tensors_; }
  /// A host copy of every output, named as declared.
  OutputSet download() const;

 private:
  MemoryBackend* backend_;
  const Definition* def_;
  std::vector<Shape> shapes_;  // backing storage for the DLTensors' shape arrays
  std::vector<void*> memory_;
  std::vector<DLTensor> tensors_;
};

}  // namespace kh
