#include "kh/ref/reference_call.h"

#include <algorithm>
#include <string>

#include "kh/core/error.h"

namespace kh::ref {

void require_tensor(std::string_view what, const HostTensor& tensor, DType dtype,
                    const Shape& shape) {
  if (tensor.dtype() != dtype)
    fail("{}: expected dtype {}, got {}", what, dtype_name(dtype), dtype_name(tensor.dtype()));
  if (tensor.shape() != shape)
    fail("{}: expected shape {}, got {}", what, shape_string(shape), shape_string(tensor.shape()));
}

double scalar_value(std::string_view what, const HostTensor& tensor) {
  if (!tensor.is_scalar())
    fail("{}: expected a scalar (shape []), got shape {}", what, shape_string(tensor.shape()));
  return tensor.get(0);
}

void check_call(const Definition& def, const AxisValues& axes, const InputSet& inputs,
                const OutputSet& outputs, std::initializer_list<std::string_view> may_be_absent) {
  for (const auto& decl : def.inputs) {
    const HostTensor* tensor = inputs.find(decl.name);
    if (!tensor) {
      const bool allowed = decl.optional || std::find(may_be_absent.begin(), may_be_absent.end(),
                                                      decl.name) != may_be_absent.end();
      if (!allowed) fail("{}: required input '{}' is missing", def.name, decl.name);
      continue;
    }
    require_tensor(fmt::format("{}: input '{}'", def.name, decl.name), *tensor, decl.dtype,
                   def.shape_of(decl, axes));
  }
  for (const auto& decl : def.outputs) {
    const HostTensor* tensor = outputs.find(decl.name);
    if (!tensor) fail("{}: output '{}' is missing", def.name, decl.name);
    require_tensor(fmt::format("{}: output '{}'", def.name, decl.name), *tensor, decl.dtype,
                   def.shape_of(decl, axes));
  }
}

std::int64_t axis_value(const Definition& def, const AxisValues& axes, std::string_view axis) {
  auto it = axes.find(std::string(axis));
  if (it == axes.end()) fail("{}: no value for axis '{}'", def.name, axis);
  return it->second;
}

void require_axis(const Definition& def, const AxisValues& axes, std::string_view axis,
                  std::int64_t expected) {
  const std::int64_t value = axis_value(def, axes, axis);
  if (value != expected)
    fail("{}: axis '{}' is {}, but this reference is written for {}", def.name, axis, value,
         expected);
}

}  // namespace kh::ref
