// The small-chunk route's producer warps (small_chunk_layout.h): a chunk's input requests, its
// phase A (gates, K K^T, Q K^T, A) and its phase B (the inverse, the decay ratios and the chain's
// B fragments). Everything here depends on q, k, a, b only (and v's rows, copied as they are), so
// it runs ahead of the chain.
//
// With lg_t the cumulative log2 decay through token t of the chunk and m_0 a state row (a value
// row of S^T) at the chunk's start, the delta rule token by token gives
//   delta = (I + A)^-1 diag(beta) (v - gamma * (m_0 K^T)),   A[t][i] = beta_t 2^(lg_t - lg_i) k_t . k_i  (i < t),
//   out_t = scale (gamma_t m_0 . q_t + sum_{i <= t} 2^(lg_t - lg_i) (q_t . k_i) delta_i),
//   m_16  = gamma_last m_0 + sum_i 2^(lg_last - lg_i) delta_i k_i,
// every decay ratio an exponent <= 0. Tokens past the chunk's end have zero k, q, v, beta and
// log2 decay, so their A rows are zero, their deltas zero, and they change nothing.
#pragma once

#include "chunk_stages.cuh"  // token_gates
#include "small_chunk_layout.h"

namespace khk::gdn_prefill {

/// 4 bytes from global to shared memory, asynchronously; `valid == false` writes zeros.
__device__ __forceinline__ void copy_4b_async(void* dst, const void* src, bool valid) {
#if defined(__CUDACC__)
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)),
               "l"(src), "r"(valid ? 4 : 0)
               : "memory");
#else
  khk_host::async_copy(dst, valid ? src : nullptr, 4);
#endif
}

/// Requests the `count` tokens from `t0` (count <= 16) of head h and, with `values`, the CTA's
/// kRows value rows from row0 into `tiles` (one warp; the caller commits the group).
template <int kRows>
__device__ __forceinline__ void small_request(const PrefillArgs& args, SmallTiles& tiles,
                                              int64_t t0, int count, int h, int row0, bool values,
                                              int lane) {
  const int qk = h / kGvaRatio;
  constexpr int kPieces = kHeadSize / 8;  // 16-byte pieces of a K or Q row
  for (int u = lane; u < kSmallChunk * kPieces; u += 32) {
    const int token = u / kPieces, piece = u % kPieces;
    const bool valid = token < count;
    const int64_t at = ((t0 + (valid ? token : 0)) * kQKHeads + qk) * kHeadSize + piece * 8;
    copy_16b_async(&tiles.k[token][piece * 8], args.k + at, valid);
    copy_16b_async(&tiles.q[token][piece * 8], args.q + at, valid);
  }
  constexpr int kVPieces = kRows / 8;
  for (int u = lane; values && u < kSmallChunk * kVPieces; u += 32) {
    const int token = u / kVPieces, piece = u % kVPieces;
    const bool valid = token < count;
    const int64_t at = ((t0 + (valid ? token : 0)) * kVHeads + h) * kHeadSize + row0 + piece * 8;
    copy_16b_async(&tiles.v[token][piece * 8], args.v + at, valid);
  }
  const int token = lane % kSmallChunk;
  const bool valid = token < count;
  const int64_t at = (t0 + (valid ? token : 0)) * kVHeads + (h & ~1);
  if (lane < kSmallChunk) copy_4b_async(&tiles.a[token], args.a + at, valid);
  else copy_4b_async(&tiles.b[token], args.b + at, valid);
}

/// Head h's bf16 of an aligned pair, as a float.
__device__ __forceinline__ float pair_half(uint32_t pair, int h) {
  return __uint_as_float(h & 1 ? pair & 0xffff0000u : pair << 16);
}

/// Phase A of one chunk (one warp): the gates and their cumulative log2 decay, K K^T and, with
/// kQueryKeys, Q K^T on tensor cores (bf16 inputs, exact products, fp32 sums), and A from K K^T in
/// registers. Without kQueryKeys the scale warp computes Q K^T itself (small_query_keys,
/// SMALL_SCALE_QK) and `out.qk` is left alone.
template <bool kQueryKeys = true>
__device__ __forceinline__ void small_gate_products(const SmallTiles& tiles, SmallProducts& out,
                                                    int count, int h, float A_log, float dt_bias,
                                                    int lane) {
  float lg = 0.0f, beta = 0.0f;
  if (lane < count)
    token_gates(pair_half(tiles.a[lane], h), pair_half(tiles.b[lane], h), A_log, dt_bias, lg, beta);
#pragma unroll
  for (int offset = 1; offset < kSmallChunk; offset *= 2) {  // inclusive scan over lanes 0-15
    const float below = __shfl_up_sync(0xffffffffu, lg, offset);
    if ((lane % kSmallChunk) >= offset) lg += below;
  }
  if (lane < kSmallChunk) out.log2_decay[lane] = lg, out.beta[lane] = beta;

  // Lane l addresses row l % 8 of matrix l / 8 of a 16-key step: in B order (tokens 0-7 | 8-15)
  // x (keys 0-7 | 8-15), registers 0, 1 the B fragment of tokens 0-7 and 2, 3 that of tokens
  // 8-15; in A order (keys 0-7 | 8-15) x (tokens 0-7 | 8-15). Two loads rather than register
  // moves between the orders.
  const int m = lane / 8, r = lane % 8;
  const int b_row = (m / 2) * 8 + r, b_col = (m % 2) * 8, a_row = (m % 2) * 8 + r, a_col = (m / 2) * 8;
  float kk[2][4] = {}, qk[2][4] = {};
#pragma unroll
  for (int s = 0; s < kHeadSize / 16; ++s) {
    uint32_t kb[4], ka[4];
    ldmatrix_x4(kb, &tiles.k[b_row][16 * s + b_col]);
    ldmatrix_x4(ka, &tiles.k[a_row][16 * s + a_col]);
    mma_bf16(kk[0], ka, kb[0], kb[1]);
    mma_bf16(kk[1], ka, kb[2], kb[3]);
    if constexpr (kQueryKeys) {
      uint32_t qa[4];
      ldmatrix_x4(qa, &tiles.q[a_row][16 * s + a_col]);
      mma_bf16(qk[0], qa, kb[0], kb[1]);
      mma_bf16(qk[1], qa, kb[2], kb[3]);
    }
  }
  __syncwarp();  // the gates above, read back below by other lanes
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int t = g + 8 * half;
    const float lg_t = out.log2_decay[t], beta_t = out.beta[t];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int i = 8 * nt + 2 * c + e;
        const float decay = fast_exp2(fminf(lg_t - out.log2_decay[i], 0.0f));
        out.a[t][i] = i < t ? beta_t * decay * kk[nt][2 * half + e] : 0.0f;
        if constexpr (kQueryKeys) out.qk[t][i] = qk[nt][2 * half + e];
      }
  }
}

/// Phase B's first half (one warp): X = (I + A)^-1 by forward substitution in fp32 (lane j < 16
/// holds column j; each step's updates are independent FMAs), X' = X diag(beta), and X''s B
/// fragments.
__device__ __forceinline__ void small_solve(const SmallProducts& in, SmallSolveScratch& sc,
                                            SmallOperands& out, int lane) {
  const int j = lane % kSmallChunk;
  float x[kSmallChunk];
#pragma unroll
  for (int t = 0; t < kSmallChunk; ++t) x[t] = t == j ? 1.0f : 0.0f;
#pragma unroll
  for (int i = 0; i < kSmallChunk; ++i)
#pragma unroll
    for (int t = i + 1; t < kSmallChunk; ++t) x[t] = fmaf(-in.a[t][i], x[i], x[t]);
  if (lane < kSmallChunk) {
    const float beta = in.beta[j];
#pragma unroll
    for (int t = 0; t < kSmallChunk; ++t) sc.x[t][j] = x[t] * beta;
  }
  __syncwarp();
  // B[k = i][n = t] = X'[t][i]: lane (g, c) holds X'[8 nt + g][2c, 2c + 1] and [2c + 8, 2c + 9].
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const int t = 8 * nt + g;
    uint32_t hi0, lo0, hi1, lo1;
    split_bf16x2(sc.x[t][2 * c], sc.x[t][2 * c + 1], hi0, lo0);
    split_bf16x2(sc.x[t][2 * c + 8], sc.x[t][2 * c + 9], hi1, lo1);
    out.x[nt][lane] = make_uint4(hi0, hi1, lo0, lo1);
  }
}

/// Q K^T of a chunk (one warp) on tensor cores, as the accumulators of two m16n8 tiles: lane
/// (g, c) holds qk[nt][2 half + e] = q_t . k_i for t = g + 8 half, i = 8 nt + 2 c + e -- the
/// entries small_scale's B fragments of P' need in that very lane, so nothing moves between lanes.
/// The scale warp runs it as soon as the chunk's tile lands, beside the gate warp's phase A
/// (SMALL_SCALE_QK).
__device__ __forceinline__ void small_query_keys(const SmallTiles& tiles, float (&qk)[2][4],
                                                 int lane) {
  const int m = lane / 8, r = lane % 8;  // row addresses as in small_gate_products
  const int b_row = (m / 2) * 8 + r, b_col = (m % 2) * 8, a_row = (m % 2) * 8 + r, a_col = (m / 2) * 8;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) qk[nt][e] = 0.0f;
#pragma unroll
  for (int s = 0; s < kHeadSize / 16; ++s) {
    uint32_t kb[4], qa[4];
    ldmatrix_x4(kb, &tiles.k[b_row][16 * s + b_col]);
    ldmatrix_x4(qa, &tiles.q[a_row][16 * s + a_col]);
    mma_bf16(qk[0], qa, kb[0], kb[1]);
    mma_bf16(qk[1], qa, kb[2], kb[3]);
  }
}

/// Phase B's second half (one warp): scale * P' as B fragments, each lane computing its own eight
/// entries from Q K^T in small_query_keys' layout, and the chain's per-token scalings.
__device__ __forceinline__ void small_scale(const SmallProducts& in, const float (&qk)[2][4],
                                            SmallOperands& out, float scale, int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const int t = 8 * nt + g;
    const float lg_t = in.log2_decay[t];
    float p[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 2 * c + (e % 2) + 8 * (e / 2);
      const float decay = fast_exp2(fminf(lg_t - in.log2_decay[i], 0.0f));
      p[e] = i <= t ? scale * decay * qk[e / 2][2 * nt + e % 2] : 0.0f;
    }
    uint32_t hi0, lo0, hi1, lo1;
    split_bf16x2(p[0], p[1], hi0, lo0);
    split_bf16x2(p[2], p[3], hi1, lo1);
    out.p[nt][lane] = make_uint4(hi0, hi1, lo0, lo1);
  }
  if (lane < kSmallChunk) {
    const float lg = in.log2_decay[lane], last = in.log2_decay[kSmallChunk - 1];
    const float gamma = fast_exp2(lg);
    out.gamma[lane] = gamma;
    out.sgamma[lane] = scale * gamma;
    out.w[lane] = fast_exp2(fminf(last - lg, 0.0f));
    if (lane == 0) out.gamma_last = fast_exp2(last);
  }
}

/// The same with Q K^T from phase A's products (`in.qk`, written where the gate warp computes it).
__device__ __forceinline__ void small_scale(const SmallProducts& in, SmallOperands& out,
                                            float scale, int lane) {
  const int g = lane / 4, c = lane % 4;
  float qk[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int e = 0; e < 2; ++e) qk[nt][2 * half + e] = in.qk[g + 8 * half][8 * nt + 2 * c + e];
  small_scale(in, qk, out, scale, lane);
}

}  // namespace khk::gdn_prefill
