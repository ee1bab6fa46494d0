// The split route's shared memory: the gathered rows, Q and P in the 128-byte swizzle the
// warpgroup MMAs read (warpgroup_mma.cuh), and the descriptors that name each MMA's operands.
//
// A tile is a stack of 128-byte lines (64 bf16 values each): a block's row r, values 64 c to
// 64 c + 63, is line r of column c (kRowsColumnBytes apart); Q's head h, values 64 c .. 64 c + 63,
// is line h of Q's column c; P's head h (its 64 rows' probabilities) is line h. Within each
// 1024-byte group of 8 lines, the 16-byte pieces of line i are stored in the order piece ^ (i % 8)
// (the hardware's 128-byte swizzle), so the 8 lines an MMA reads at one offset fall in distinct
// banks. The same rows serve as K (the logits' A operand, K-major: a row's values contiguous) and
// as V (the output's A operand, M-major: O^T = V^T P^T reads value columns as M), so each row is
// gathered once.
#pragma once

#include <cstdint>

#include "dsa_attention.cuh"
#include "warpgroup_mma.cuh"

namespace khk::dsa_attention {

constexpr int kBlockRows = 64;                                // rows per gathered block
constexpr int kLineValues = 64;                               // bf16 values per 128-byte line
constexpr uint32_t kLineBytes = 128;
constexpr uint32_t kSwizzleBytes = 8 * kLineBytes;            // the swizzle's period
constexpr int kKeyColumns = kKeyDim / kLineValues;            // 9: 8 of ckv, 1 of kpe
constexpr int kCkvColumns = kCkvDim / kLineValues;            // 8
constexpr uint32_t kRowsColumnBytes = kBlockRows * kLineBytes;  // 8 KB
constexpr uint32_t kRowsStageBytes = kKeyColumns * kRowsColumnBytes;
constexpr uint32_t kQColumnBytes = kHeads * kLineBytes;       // 2 KB
constexpr uint32_t kQBytes = kKeyColumns * kQColumnBytes;
constexpr uint32_t kPBytes = kHeads * kLineBytes;             // 16 heads x 64 rows of bf16
constexpr int kPiecesPerLine = kLineBytes / 16;
static_assert(kKeyDim % kLineValues == 0 && kBlockRows * 2 == kLineBytes);

/// Byte offset of 16-byte piece `piece` of line `line` (values 8 piece .. 8 piece + 7 of the
/// line's row or head, `piece` counted over all columns) in a tile whose columns are
/// `column_bytes` apart.
__host__ __device__ constexpr uint32_t swizzled_piece(uint32_t column_bytes, int line, int piece) {
  return static_cast<uint32_t>(piece / kPiecesPerLine) * column_bytes + line * kLineBytes +
         (static_cast<uint32_t>((piece % kPiecesPerLine) ^ (line % 8)) << 4);
}

// The operands' descriptors. A k-step of 16 values inside a line advances the start address by
// 32 bytes (the swizzle is applied to the final address, so the pieces stay where they were
// stored); 8 lines further is kSwizzleBytes. Where an operand's other dimension fits one line (a
// 64-wide M-major tile), the leading offset is unused; it is given the same value.

/// Logits S^T = K Q^T, k-step `k` (16 of the 576 key values): A is the block's 64 rows.
__device__ __forceinline__ uint64_t logits_a(uint32_t rows, int k) {
  return sw128_descriptor(rows + (k / 4) * kRowsColumnBytes + (k % 4) * 32, 16, kSwizzleBytes);
}
/// ... and B is Q's 16 heads.
__device__ __forceinline__ uint64_t logits_b(uint32_t q, int k) {
  return sw128_descriptor(q + (k / 4) * kQColumnBytes + (k % 4) * 32, 16, kSwizzleBytes);
}
/// Output O^T += V^T P^T, value columns 64 m .. 64 m + 63 and block rows 16 k .. 16 k + 15: A is
/// the rows read M-major (8-row groups kSwizzleBytes apart).
__device__ __forceinline__ uint64_t output_a(uint32_t rows, int m, int k) {
  return sw128_descriptor(rows + m * kRowsColumnBytes + k * 2 * kSwizzleBytes, kSwizzleBytes,
                          kSwizzleBytes);
}
/// ... and B is P's 16 heads, rows 16 k .. 16 k + 15.
__device__ __forceinline__ uint64_t output_b(uint32_t p, int k) {
  return sw128_descriptor(p + k * 32, 16, kSwizzleBytes);
}

}  // namespace khk::dsa_attention
