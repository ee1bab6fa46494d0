#include "kh/run/builtin_candidates.h"

#include <cstring>

#include "kh/core/error.h"
#include "kh/ref/cpu_reference.h"

namespace kh {
namespace {

// Axis values recovered from the shapes the candidate receives, as a real candidate would.
AxisValues axes_from_tensors(const Definition& def, const DLTensor* tensors) {
  AxisValues axes;
  for (const auto& a : def.axes)
    if (a.is_const) axes[a.name] = a.value;
  for (std::size_t i = 0; i < def.inputs.size() + def.outputs.size(); ++i) {
    const TensorDecl& decl =
        i < def.inputs.size() ? def.inputs[i] : def.outputs[i - def.inputs.size()];
    if (!decl.shape) continue;
    for (std::size_t d = 0; d < decl.shape->size() && d < static_cast<std::size_t>(tensors[i].ndim);
         ++d)
      axes[(*decl.shape)[d]] = tensors[i].shape[d];
  }
  return axes;
}

int cpu_reference_call(const Definition& def, const DLTensor* tensors, std::int32_t count) {
  if (static_cast<std::size_t>(count) != def.inputs.size() + def.outputs.size())
    return KH_ERROR_INVALID_ARGUMENT;
  const AxisValues axes = axes_from_tensors(def, tensors);
  InputSet inputs;
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const TensorDecl& decl = def.inputs[i];
    HostTensor t(decl.dtype, def.shape_of(decl, axes));
    if (!tensors[i].data) {
      inputs.add(decl.name, HostTensor(decl.dtype, {0}), false);
      continue;
    }
    std::memcpy(t.bytes(), tensors[i].data, t.nbytes());
    inputs.add(decl.name, std::move(t));
  }
  const OutputSet outputs = run_cpu_reference(def, axes, inputs);
  for (std::size_t o = 0; o < outputs.size(); ++o)
    std::memcpy(tensors[def.inputs.size() + o].data, outputs[o].tensor.bytes(),
                outputs[o].tensor.nbytes());
  return KH_OK;
}

}  // namespace

bool is_builtin_candidate(const std::string& name) {
  return name.rfind(kBuiltinPrefix, 0) == 0;
}

std::unique_ptr<CandidateLibrary> make_builtin_candidate(const std::string& name,
                                                         const Definition& def) {
  if (name != "builtin:cpu_reference")
    fail("unknown builtin candidate '{}' (builtins: builtin:cpu_reference, {})", name,
         kDefinitionReferenceBuiltin);
  if (!find_cpu_reference(def.name)) fail("{}: definition {} has no CPU reference", name, def.name);
  return std::make_unique<CandidateLibrary>(
      name, [def](const DLTensor* tensors, std::int32_t count, void*, void*, std::uint64_t) {
        try {
          return cpu_reference_call(def, tensors, count);
        } catch (const Error&) {
          return static_cast<int>(KH_ERROR_INVALID_ARGUMENT);
        }
      });
}

}  // namespace kh
