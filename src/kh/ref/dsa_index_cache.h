// Reading the DSA indexer's FP8 K cache on the host (layout: dsa_index_layout.h), shared by its
// CPU reference and its checker.
#pragma once

#include <cstdint>

#include "kh/core/host_tensor.h"
#include "kh/ref/dsa_index_layout.h"

namespace kh::dsa {

/// Per-token float32 scale.
float key_scale(const HostTensor& cache, std::int64_t page, int offset);
/// Dequantized key value: fp8 decoded times the token's scale, multiplied in float32 as the
/// definition's reference does.
float key_value(const HostTensor& cache, std::int64_t page, int offset, int d);

/// The indexer score of global token slot `slot` (page*64 + offset) for batch row b:
/// sum_h weights[b,h] * relu(q[b,h] . K[slot]), accumulated in double.
double index_score(const HostTensor& q_fp8, const HostTensor& weights, const HostTensor& cache,
                   std::int64_t b, std::int64_t slot);

}  // namespace kh::dsa
