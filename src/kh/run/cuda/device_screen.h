// Checking a candidate's outputs on the device: the element rule's screen (check/element_screen.h)
// of two device tensors, and the poison pattern written where the outputs live, so that neither
// the poisoning before a call nor the check of a passing call moves outputs over PCIe (54 MB per
// call for GDN prefill at 8192 tokens).
#pragma once

#include <cstddef>
#include <cstdint>

#include <optional>

#include "kh/check/element_screen.h"
#include "kh/core/dtype.h"

namespace kh {

/// The screen of `numel` elements of two device tensors of `dtype` on `cuda_stream`
/// (synchronises it); nullopt, with nothing computed, for a dtype other than float32, float16 and
/// bfloat16.
std::optional<ElementScreen> device_screen(const void* solution, const void* reference, DType dtype,
                                           std::int64_t numel, float atol, float rtol,
                                           void* cuda_stream);

/// Fills `bytes` bytes at device address `dst` (any alignment) with `pattern` (1, 2, 4 or 8
/// bytes) repeated, asynchronously on `cuda_stream`: no host memory is read after the call.
void device_fill_pattern(void* dst, std::size_t bytes, const void* pattern,
                         std::size_t pattern_bytes, void* cuda_stream);

}  // namespace kh
