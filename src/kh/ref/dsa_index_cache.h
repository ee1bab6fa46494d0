// The deep_gemm FP8 K-cache page layout of the DSA top-k indexer, shared by its reference and
// its checker. The tensor is declared [num_pages, 64, 1, 132] int8, but each page is one flat
// block of 64*132 bytes: 64 tokens x 128 FP8 e4m3 values (token-major), then 64 float32 scales.
// Byte 132*i of a page is therefore NOT token i's record.
#pragma once

#include <cstdint>

#include "kh/core/host_tensor.h"

namespace kh::dsa {

inline constexpr int kPageSize = 64;
inline constexpr int kIndexHeads = 64;
inline constexpr int kIndexHeadDim = 128;
inline constexpr int kTopK = 2048;
inline constexpr int kPageBytes = kPageSize * (kIndexHeadDim + 4);
inline constexpr int kPageScaleOffset = kPageSize * kIndexHeadDim;

/// Byte offset of token `offset`'s value d in page `page`, and of its scale.
inline std::int64_t key_value_byte(std::int64_t page, int offset, int d) {
  return page * kPageBytes + static_cast<std::int64_t>(offset) * kIndexHeadDim + d;
}
inline std::int64_t key_scale_byte(std::int64_t page, int offset) {
  return page * kPageBytes + kPageScaleOffset + static_cast<std::int64_t>(offset) * 4;
}

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
