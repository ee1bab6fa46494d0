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

constexpr float kLn2 = 0.6931471805599453f;

/// log2(x) from the SFU (relative error ~2^-22; x > 0).
__device__ __forceinline__ float fast_log2(float x) {
#if defined(__CUDACC__)
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
#else
  return log2f(x);
#endif
}

/// a / b and 1 / x without the IEEE division's slow path.
__device__ __forceinline__ float fast_divide(float a, float b) {
#if defined(__CUDACC__)
  return __fdividef(a, b);
#else
  return a / b;
#endif
}
__device__ __forceinline__ float fast_reciprocal(float x) {
#if defined(__CUDACC__)
  return __frcp_rn(x);
#else
  return 1.0f / x;
#endif
}

/// The gates of a token (token_gates) from the SFU's exp2 and log2: softplus(x) = log1p(e^x) by
/// Kahan's form log(u) * e / (u - 1) with u = 1 + e (exact where u rounds to 1), beta by the fast
/// reciprocal. About 1e-7 relative error, no slow paths.
__device__ __forceinline__ void token_gates_fast(float a, float b, float A_log, float dt_bias,
                                                 float& log2_g, float& beta) {
  const float x = a + dt_bias;
  const float e = fast_exp2(x * kLog2e);
  const float u = 1.0f + e;
  const float log1p_e = u == 1.0f ? e : fast_log2(u) * kLn2 * fast_divide(e, u - 1.0f);
  const float softplus = x > kSoftplusThreshold ? x : log1p_e;
  log2_g = -expf(A_log) * softplus * kLog2e;
  beta = fast_reciprocal(1.0f + fast_exp2(-b * kLog2e));
}

/// Phase A of one chunk (one warp): the gates and their cumulative log2 decay, K K^T and Q K^T on
/// tensor cores (bf16 inputs, exact products, fp32 sums), and A from K K^T in registers. With
/// kSmallGatesAfterGram the products are issued first and the gates computed while they run.
__device__ __forceinline__ void small_gate_products(const SmallTiles& tiles, SmallProducts& out,
                                                    int count, int h, float A_log, float dt_bias,
                                                    int lane) {
  // Lane l addresses row l % 8 of matrix l / 8 of a 16-key step: in B order (tokens 0-7 | 8-15)
  // x (keys 0-7 | 8-15), registers 0, 1 the B fragment of tokens 0-7 and 2, 3 that of tokens
  // 8-15; in A order (keys 0-7 | 8-15) x (tokens 0-7 | 8-15). Two loads rather than register
  // moves between the orders.
  const int m = lane / 8, r = lane % 8;
  const int b_row = (m / 2) * 8 + r, b_col = (m % 2) * 8, a_row = (m % 2) * 8 + r, a_col = (m / 2) * 8;
  float kk[2][4] = {}, qk[2][4] = {};
  const auto gram = [&] {
#pragma unroll
    for (int s = 0; s < kHeadSize / 16; ++s) {
      uint32_t kb[4], ka[4], qa[4];
      ldmatrix_x4(kb, &tiles.k[b_row][16 * s + b_col]);
      ldmatrix_x4(ka, &tiles.k[a_row][16 * s + a_col]);
      ldmatrix_x4(qa, &tiles.q[a_row][16 * s + a_col]);
      mma_bf16(kk[0], ka, kb[0], kb[1]);
      mma_bf16(kk[1], ka, kb[2], kb[3]);
      mma_bf16(qk[0], qa, kb[0], kb[1]);
      mma_bf16(qk[1], qa, kb[2], kb[3]);
    }
  };
  if constexpr (kSmallGatesAfterGram) gram();
  float lg = 0.0f, beta = 0.0f;
  if (lane < count) {
    const float a = pair_half(tiles.a[lane], h), b = pair_half(tiles.b[lane], h);
    if constexpr (kSmallFastGates) token_gates_fast(a, b, A_log, dt_bias, lg, beta);
    else token_gates(a, b, A_log, dt_bias, lg, beta);
  }
#pragma unroll
  for (int offset = 1; offset < kSmallChunk; offset *= 2) {  // inclusive scan over lanes 0-15
    const float below = __shfl_up_sync(0xffffffffu, lg, offset);
    if ((lane % kSmallChunk) >= offset) lg += below;
  }
  if (lane < kSmallChunk) out.log2_decay[lane] = lg, out.beta[lane] = beta;
  if constexpr (!kSmallGatesAfterGram) gram();
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
        out.qk[t][i] = qk[nt][2 * half + e];
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

/// Phase B's second half (one warp): scale * P' as B fragments, each lane computing its own eight
/// entries, and the chain's per-token scalings.
__device__ __forceinline__ void small_scale(const SmallProducts& in, SmallOperands& out,
                                            float scale, int lane) {
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
      p[e] = i <= t ? scale * decay * in.qk[t][i] : 0.0f;
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

}  // namespace khk::gdn_prefill
