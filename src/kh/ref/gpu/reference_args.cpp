#include "kh/ref/gpu/reference_args.h"

#include "kh/core/error.h"

namespace kh::gpuref {

std::int64_t ReferenceArgs::axis(std::string_view name) const {
  auto it = axes_.find(std::string(name));
  if (it == axes_.end()) fail("{}: no value for axis '{}'", definition_, name);
  return it->second;
}

const DLTensor& ReferenceArgs::find(const std::vector<NamedDLTensor>& tensors,
                                    std::string_view name, const char* what) const {
  for (const auto& t : tensors)
    if (t.name == name) return t.tensor;
  fail("{}: the GPU reference asks for {} '{}', which the definition does not declare", definition_,
       what, name);
}

double ReferenceArgs::scalar(std::string_view name, double fallback) const {
  const DLTensor& t = find(inputs_, name, "input");
  if (!t.data) return fallback;
  if (t.ndim == 0 && t.device.device_type == kDLCPU && t.dtype.bits == 32) {
    if (t.dtype.code == kDLFloat) return *static_cast<const float*>(t.data);
    if (t.dtype.code == kDLInt) return *static_cast<const std::int32_t*>(t.data);
  }
  fail("{}: scalar input '{}' must be a 0-d float32 or int32 host tensor", definition_, name);
}

}  // namespace kh::gpuref
