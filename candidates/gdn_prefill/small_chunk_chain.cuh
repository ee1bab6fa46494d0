// The small-chunk route's chain (small_chunk_layout.h): one warp walks 16 value rows of a state
// through a sequence's chunks, the rows M (= S^T, [value][key]) held as the fp32 accumulators of
// sixteen m16n8 tiles (8 keys each). Per chunk, with the producer warps' operands (the formulas
// are in small_chunk_producer.cuh):
//   D = M K^T, Dq = M Q^T                 16 x 16 x 128, M as bf16 hi + lo, K and Q exact
//   Delta = V X'^T - (D diag(gamma)) X'^T  16 x 16 x 16, V exact, the rest hi + lo
//   O = Dq diag(scale gamma) + Delta (scale P')^T
//   M = gamma_last M + (Delta diag(w)) K    16 x 128 x 16, Delta hi + lo, K exact
// Every computed operand goes through the bf16 tensor cores as a hi + lo pair (~15-16 mantissa bits),
// the output path too, so the route keeps the precision the official tolerance needs under the
// adversarial `extreme` inputs (tuning.h, SPLIT_OPERANDS).
// With SMALL_SCALED_STATE (tuning.h) a warp holds its rows as M / s and the scalar s (`scale`,
// the same in every chain warp of a walk: each computes it from the same operands): D and Dq of
// the held rows times s are the true ones, so s joins gamma and scale gamma, the update adds
// (Delta diag(w / s')) K with s' = s gamma_last instead of decaying 64 accumulators,
// small_rescale_rows multiplies the rows by s at a chunk's start where s has become small, and
// small_store_rows multiplies by s. The splits are relative, so the products' bits are as
// precise as before; only w / s' and the products by s round once more (2^-24).
#pragma once

#include "mma_tiles.cuh"
#include "small_chunk_layout.h"
#include "warpgroup_mma.cuh"  // kmajor_offset, tf32_remainder

namespace khk::gdn_prefill {

/// Loads (state != null) or zeroes the warp's 16 rows from `rows` ([16][128] floats, k-last):
/// kKeyTiles tiles of 8 key columns from the first (a key-split warp: 8, from its half's column).
template <int kKeyTiles>
__device__ __forceinline__ void small_load_rows(float (&m)[kKeyTiles][4], const float* rows,
                                                int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int j = 0; j < kKeyTiles; ++j) {
    float2 top = make_float2(0.0f, 0.0f), bottom = top;
    if (rows) {
      top = *reinterpret_cast<const float2*>(rows + g * kHeadSize + 8 * j + 2 * c);
      bottom = *reinterpret_cast<const float2*>(rows + (g + 8) * kHeadSize + 8 * j + 2 * c);
    }
    m[j][0] = top.x, m[j][1] = top.y, m[j][2] = bottom.x, m[j][3] = bottom.y;
  }
}

/// The warp's 16 rows of the identity from row `first` (a map's rows: row i is e_i).
__device__ __forceinline__ void small_identity_rows(float (&m)[16][4], int first, int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      m[j][e] = first + g + 8 * (e / 2) == 8 * j + 2 * c + e % 2 ? 1.0f : 0.0f;
}

/// Stores the true rows, m * scale (a warp holds them as M / s with s its `scale`: small_update_rows).
template <int kKeyTiles>
__device__ __forceinline__ void small_store_rows(const float (&m)[kKeyTiles][4], float* rows,
                                                 int lane, float scale = 1.0f) {
  const int g = lane / 4, c = lane % 4;
  if constexpr (!kSmallScaledState) scale = 1.0f;
#pragma unroll
  for (int j = 0; j < kKeyTiles; ++j) {
    *reinterpret_cast<float2*>(rows + g * kHeadSize + 8 * j + 2 * c) =
        make_float2(m[j][0] * scale, m[j][1] * scale);
    *reinterpret_cast<float2*>(rows + (g + 8) * kHeadSize + 8 * j + 2 * c) =
        make_float2(m[j][2] * scale, m[j][3] * scale);
  }
}

/// The warp's 16 rows of a group's state map A (rows r0 .. r0 + 15, as small_store_rows stores
/// them) into A^T's K-major wgmma operand layout (element (r, n) of A at kmajor_offset(n, r)) at
/// `hi`, their tf32 remainders at `lo`: the context-parallel scan copies both into shared memory
/// as they are (small_chunk_scan.cuh). A warp's 32 stores of one (j, e) fall into 256 bytes.
__device__ __forceinline__ void small_store_rows_transposed(const float (&m)[16][4], float* hi,
                                                            float* lo, int r0, int lane,
                                                            float scale = 1.0f) {
  const int g = lane / 4, c = lane % 4;
  if constexpr (!kSmallScaledState) scale = 1.0f;
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int at = kmajor_offset(8 * j + 2 * c + e % 2, r0 + g + 8 * (e / 2));
      const float x = m[j][e] * scale;
      hi[at] = x;
      lo[at] = tf32_remainder(x);
    }
}

/// x = hi + lo + O(2^-16 |x|) for (x0, x1), hi by truncation: the pair's hi is one byte permute
/// of the two floats' upper halves and x - hi is exact, so a pair costs 6 instructions where
/// split_bf16x2's rounded hi costs 8 (the chain splits 88 values per chunk). One bit less margin
/// than the rounded split: |lo| < 2^-7 |x| instead of 2^-8, rounded to bf16.
__device__ __forceinline__ void split_bf16x2_truncated(float x0, float x1, uint32_t& hi,
                                                       uint32_t& lo) {
  const uint32_t b0 = __float_as_uint(x0), b1 = __float_as_uint(x1);
#if defined(__CUDACC__)
  asm("prmt.b32 %0, %1, %2, 0x7632;\n" : "=r"(hi) : "r"(b0), "r"(b1));
#else
  hi = (b0 >> 16) | (b1 & 0xffff0000u);
#endif
  lo = pack_bf16x2(x0 - __uint_as_float(b0 & 0xffff0000u), x1 - __uint_as_float(b1 & 0xffff0000u));
}

/// split_a_fragment with the truncated split (mma_tiles.cuh has the layout).
__device__ __forceinline__ void split_a_truncated(const float (&left)[4], const float (&right)[4],
                                                  uint32_t (&hi)[4], uint32_t (&lo)[4],
                                                  float s0 = 1.f, float s1 = 1.f, float s2 = 1.f,
                                                  float s3 = 1.f) {
  split_bf16x2_truncated(left[0] * s0, left[1] * s1, hi[0], lo[0]);
  split_bf16x2_truncated(left[2] * s0, left[3] * s1, hi[1], lo[1]);
  split_bf16x2_truncated(right[0] * s2, right[1] * s3, hi[2], lo[2]);
  split_bf16x2_truncated(right[2] * s2, right[3] * s3, hi[3], lo[3]);
}

/// d = a + b, component-wise.
__device__ __forceinline__ void add_tiles(const float (&a)[4], const float (&b)[4], float (&d)[4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) d[e] = a[e] + b[e];
}

/// An output element: bf16 into the output tensor, or fp32 into the context-parallel form's
/// workspace (small_chunk_groups.h: partial outputs and queries through a group's map).
__device__ __forceinline__ void store_output(__nv_bfloat16* at, float x) {
  *at = __float2bfloat16_rn(x);
}
__device__ __forceinline__ void store_output(float* at, float x) { *at = x; }

/// Delta = V X'^T - (D diag(gamma)) X'^T for the warp's 16 rows (warp_row0 within the CTA's
/// tile) from the full D (both token tiles) of the rows held at `scale`. V's A fragment (rows x
/// tokens) by transposed loads of the [token][row] tile: matrices (tokens 0-7 | 8-15) x (rows 0-7
/// | 8-15) in A order.
template <bool kScaled = kSmallScaledState>
__device__ __forceinline__ void small_delta(const SmallTiles& tiles, const SmallOperands& op,
                                            const float (&d)[2][4], int warp_row0,
                                            float (&delta)[2][4], int lane, float scale = 1.0f) {
  const int c = lane % 4, mi = lane / 8, r = lane % 8;
  uint32_t va[4], rhi[4], rlo[4];
  ldmatrix_x4_trans(va, &tiles.v[(mi / 2) * 8 + r][warp_row0 + (mi % 2) * 8]);
  const float ns = kScaled ? -scale : -1.0f;  // D of the held rows times s is the true D
  split_a_truncated(d[0], d[1], rhi, rlo, ns * op.gamma[2 * c], ns * op.gamma[2 * c + 1],
                    ns * op.gamma[8 + 2 * c], ns * op.gamma[9 + 2 * c]);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const uint4 xb = op.x[nt][lane];
    delta[nt][0] = delta[nt][1] = delta[nt][2] = delta[nt][3] = 0.0f;
    mma_bf16(delta[nt], va, xb.x, xb.y);
    mma_bf16(delta[nt], va, xb.z, xb.w);
    mma_bf16(delta[nt], rhi, xb.x, xb.y);
    mma_bf16(delta[nt], rhi, xb.z, xb.w);
    mma_bf16(delta[nt], rlo, xb.x, xb.y);
  }
}

/// The outputs of token tile nt (tokens 8 nt ..) = Dq diag(scale gamma) + Delta (scale P')^T from
/// that tile's full Dq (of the rows held at `scale`) and Delta's hi + lo A fragments, stored for
/// the valid tokens (< count; token t's row r at out[t * 8 * 128 + r]).
template <typename Out, bool kScaled = kSmallScaledState>
__device__ __forceinline__ void small_output_tile(const float (&dq)[4], const uint32_t (&dhi)[4],
                                                  const uint32_t (&dlo)[4],
                                                  const SmallOperands& op, int nt, int warp_row0,
                                                  int count, Out* out, int lane,
                                                  float scale = 1.0f) {
  const int g = lane / 4, c = lane % 4;
  const int t0 = 8 * nt + 2 * c;
  float s0 = op.sgamma[t0], s1 = op.sgamma[t0 + 1];
  if constexpr (kScaled) s0 *= scale, s1 *= scale;  // Dq of the held rows, times s
  float o[4] = {dq[0] * s0, dq[1] * s1, dq[2] * s0, dq[3] * s1};
  const uint4 pb = op.p[nt][lane];
  mma_bf16(o, dhi, pb.x, pb.y);
  mma_bf16(o, dhi, pb.z, pb.w);
  mma_bf16(o, dlo, pb.x, pb.y);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int t = t0 + e % 2, row = warp_row0 + g + 8 * (e / 2);
    if (t < count) store_output(out + int64_t{t} * kVHeads * kHeadSize + row, o[e]);
  }
}

/// M = gamma_last M + (Delta diag(w)) K over the warp's kKeyTiles tiles of 8 keys from key0. K's
/// B fragments (tokens x keys) by transposed loads: matrices (tokens 0-7 | 8-15) x (keys of
/// n-tile 2j | 2j + 1).
///
/// With kScaled (SMALL_SCALED_STATE) the rows are held as M / s (`scale`): with s' = s gamma_last
/// the held rows advance by (Delta diag(w / s')) K alone and s becomes s'. s' is kept at least
/// kSmallFloorStateScale (tuning.h): after a chunk that decays the state by more at once, the
/// state it keeps is off by at most 2^-24 of the state before the chunk (where gamma_last
/// underflows to 0, the floor times the held rows instead of 0). A NaN gamma_last stays NaN in
/// s. small_rescale_rows brings s back to 1 at the next chunk's start.
template <int kKeyTiles, bool kScaled = kSmallScaledState>
__device__ __forceinline__ void small_update_rows(float (&m)[kKeyTiles][4], const SmallTiles& tiles,
                                                  const SmallOperands& op,
                                                  const float (&delta)[2][4], int key0,
                                                  int lane, float& scale) {
  const int c = lane % 4, mi = lane / 8, r = lane % 8;
  float inv = 1.0f;
  if constexpr (kScaled) {
    const float next = scale * op.gamma_last;
    scale = next < kSmallFloorStateScale ? kSmallFloorStateScale : next;  // (not fmaxf: keeps NaN)
    inv = fast_reciprocal(scale);
  }
  uint32_t whi[4], wlo[4];
  split_a_truncated(delta[0], delta[1], whi, wlo, op.w[2 * c] * inv, op.w[2 * c + 1] * inv,
                    op.w[8 + 2 * c] * inv, op.w[9 + 2 * c] * inv);
#pragma unroll
  for (int j2 = 0; j2 < kKeyTiles / 2; ++j2) {
    uint32_t kb[4];
    ldmatrix_x4_trans(kb, &tiles.k[(mi % 2) * 8 + r][key0 + 8 * (2 * j2 + mi / 2)]);
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      float(&acc)[4] = m[2 * j2 + jj];
      if constexpr (!kScaled)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[e] *= op.gamma_last;
      mma_bf16(acc, whi, kb[2 * jj], kb[2 * jj + 1]);
      mma_bf16(acc, wlo, kb[2 * jj], kb[2 * jj + 1]);
    }
  }
}

/// At a chunk's start, where the rows' scale has fallen below kSmallMinStateScale: the rows times
/// it, and the scale 1 (SMALL_SCALED_STATE). A warp-uniform branch, taken once in many chunks, at
/// the point where the step waits for the last update's products anyway.
template <int kKeyTiles>
__device__ __forceinline__ void small_rescale_rows(float (&m)[kKeyTiles][4], float& scale) {
  if constexpr (kSmallScaledState) {
    if (scale < kSmallMinStateScale) {
#pragma unroll
      for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) m[j][e] *= scale;
      scale = 1.0f;
    }
  }
}

/// The lockstep pipelines' operands are there before the chain step starts: nothing to wait for.
struct OperandsReady {
  __device__ __forceinline__ void operator()() const {}
};

/// One chunk of `count` tokens for the warp's rows (warp_row0 within the CTA's tile), held at
/// `scale` (small_update_rows; advanced here): with
/// kOutput the outputs of its valid tokens to `out` (token t's row r at out[t * 8 * 128 + r]),
/// and M advanced. Without it no Dq, no O. D and Dq need only the tile and M, so
/// wait_operands() (the decoupled chain's wait for the operands) comes after them: at a walk's
/// first chunk, and whenever the producers are late, the chain's largest products overlap the
/// gate and solve work of the same chunk.
template <bool kOutput = true, typename Out = __nv_bfloat16, typename WaitOperands = OperandsReady>
__device__ __forceinline__ void small_chain_chunk(float (&m)[16][4], float& scale,
                                                  const SmallTiles& tiles,
                                                  const SmallOperands& op, int warp_row0,
                                                  int count, Out* out, int lane,
                                                  WaitOperands wait_operands = {}) {
  const int mi = lane / 8, r = lane % 8;
  small_rescale_rows(m, scale);

  // D and Dq: hi and lo products in separate accumulators (shorter dependent chains).
  float dk[2][2][4] = {}, dq[2][2][4] = {};  // [hi | lo][n-tile]
#pragma unroll
  for (int s = 0; s < kHeadSize / 16; ++s) {
    uint32_t hi[4], lo[4], kb[4], qb[4];
    split_a_truncated(m[2 * s], m[2 * s + 1], hi, lo);
    ldmatrix_x4(kb, &tiles.k[(mi / 2) * 8 + r][16 * s + (mi % 2) * 8]);
    if constexpr (kOutput) ldmatrix_x4(qb, &tiles.q[(mi / 2) * 8 + r][16 * s + (mi % 2) * 8]);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      mma_bf16(dk[0][nt], hi, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dk[1][nt], lo, kb[2 * nt], kb[2 * nt + 1]);
      if constexpr (kOutput) {
        mma_bf16(dq[0][nt], hi, qb[2 * nt], qb[2 * nt + 1]);
        mma_bf16(dq[1][nt], lo, qb[2 * nt], qb[2 * nt + 1]);
      }
    }
  }
  float d[2][4];
  add_tiles(dk[0][0], dk[1][0], d[0]);
  add_tiles(dk[0][1], dk[1][1], d[1]);

  wait_operands();
  float delta[2][4];
  small_delta(tiles, op, d, warp_row0, delta, lane, scale);
  if constexpr (kOutput) {
    uint32_t dhi[4], dlo[4];
    split_a_truncated(delta[0], delta[1], dhi, dlo);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      float o[4];
      add_tiles(dq[0][nt], dq[1][nt], o);
      small_output_tile(o, dhi, dlo, op, nt, warp_row0, count, out, lane, scale);
    }
  }
  small_update_rows(m, tiles, op, delta, 0, lane, scale);
}

}  // namespace khk::gdn_prefill
