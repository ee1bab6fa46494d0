// Validation shared by the CPU references: before a reference trusts raw pointers into its
// tensors, every tensor it reads or writes must have the dtype and shape the definition declares
// for the given axis values, so a bad input gives a clear kh::Error instead of a crash.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "kh/core/host_tensor.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh::ref {

/// Checks every declared input (present unless optional or listed in `may_be_absent`) and every
/// declared output: dtype and shape must match the definition for `axes`.
void check_call(const Definition& def, const AxisValues& axes, const InputSet& inputs,
                const OutputSet& outputs,
                std::initializer_list<std::string_view> may_be_absent = {});

/// Value of an axis; fails naming the definition when `axes` lacks it.
std::int64_t axis_value(const Definition& def, const AxisValues& axes, std::string_view axis);

/// Fails unless the axis has the value the reference's loops are written for.
void require_axis(const Definition& def, const AxisValues& axes, std::string_view axis,
                  std::int64_t expected);

/// Fails unless `tensor` has this dtype and shape; `what` names it in the message.
void require_tensor(std::string_view what, const HostTensor& tensor, DType dtype,
                    const Shape& shape);

/// The value of a 0-d (scalar) tensor.
double scalar_value(std::string_view what, const HostTensor& tensor);

}  // namespace kh::ref
