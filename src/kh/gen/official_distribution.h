// The distributions of FlashInfer-Bench's random inputs (fib_eval_spec §2.2), drawn from a kh
// random stream: floats N(0,1) in their dtype; fp8/fp4 N(0,1) clamped to [-2, 2] then cast;
// bool uniform; int8 uniform on [-128, 127]; other integers uniform on [-1024, 1023].
#pragma once

#include <cstdint>
#include <functional>

#include "kh/core/host_tensor.h"
#include "kh/gen/official_value.h"
#include "kh/gen/random_stream.h"

namespace kh {

/// Fills elements [begin, end) of the tensor with the official distribution.
void fill_official(HostTensor& tensor, const RandomStream& stream, std::int64_t begin,
                   std::int64_t end);

/// Runs body(begin, end) over [0, n) in chunks on all cores; small n runs inline.
void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace kh
