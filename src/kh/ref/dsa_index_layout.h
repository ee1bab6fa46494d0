// The deep_gemm FP8 K-cache page layout of the DSA top-k indexer (constants and byte offsets),
// host/device code shared by the generator, the references and the checker. The tensor is
// declared [num_pages, 64, 1, 132] int8, but each page is one flat block of 64*132 bytes: 64
// tokens x 128 FP8 e4m3 values (token-major), then 64 float32 scales. Byte 132*i of a page is
// therefore NOT token i's record.
#pragma once

#include <cstdint>

#include "kh/core/host_device.h"

namespace kh::dsa {

inline constexpr int kPageSize = 64;
inline constexpr int kIndexHeads = 64;
inline constexpr int kIndexHeadDim = 128;
inline constexpr int kTopK = 2048;
inline constexpr int kPageBytes = kPageSize * (kIndexHeadDim + 4);
inline constexpr int kPageScaleOffset = kPageSize * kIndexHeadDim;

/// Byte offset of token `offset`'s value d in page `page`, and of its scale.
KH_HD std::int64_t key_value_byte(std::int64_t page, int offset, int d) {
  return page * kPageBytes + static_cast<std::int64_t>(offset) * kIndexHeadDim + d;
}
KH_HD std::int64_t key_scale_byte(std::int64_t page, int offset) {
  return page * kPageBytes + kPageScaleOffset + static_cast<std::int64_t>(offset) * 4;
}

}  // namespace kh::dsa
