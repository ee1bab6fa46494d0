// The stages of one 64-token chunk of the chunked delta rule, as the chunked routes compose them
// (route_chunked.cuh: all of them in one CTA per (sequence, head, slab); chunk_prep.cuh and
// route_split.cuh: the key-only stages in parallel over every chunk, the state stages on the
// chain). Notation of route_chunked.cuh: M = S^T the [V][K] state slab, gamma the in-chunk
// cumulative log2-decay, beta the update gates.
//
//   key-only (no state, no values):  gates; A and P; X = (I + A)^-1; Tw, Tu; -W = -Tw K
//   state (per value slab, chained): Vn^T = V^T Tu^T + M (-W)^T; O^T; M update
//
// Warp w of a state stage owns value rows 16w .. 16w+15 of its slab: M (16 x 128), Vn^T and O^T
// (16 x 64) are MMA accumulators in its registers. The key-only stages share their work out over
// the CTA's warps. Every function is one stage; the callers place the barriers between them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "chunk_inverse.cuh"
#include "gdn_prefill.cuh"
#include "mma_tiles.cuh"
#include "sequence_order.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

constexpr int kLdD = kHeadSize + 8;  // bf16 row stride of 128-wide tiles (K, Q, W): 272 B
constexpr int kLdC = kChunk + 8;     // bf16 row stride of 64-wide tiles (Tw, Tu, P): 144 B
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kSoftplusThreshold = 20.0f;  // torch's softplus is linear above this

/// A chunk's gate vectors in shared memory (kChunk floats each, `decay` one float).
struct ChunkGates {
  float* gamma2;  // log2 cumulative decay
  float* beta;
  float* eg;      // e^gamma_i
  float* fac;     // e^(gamma_last - gamma_i), 0 past the chunk's end
  float* decay;   // e^gamma_last
};

/// Gate vectors laid out consecutively from `base` (4 kChunk + 1 floats).
__device__ __forceinline__ ChunkGates chunk_gates_at(float* base) {
  return {base, base + kChunk, base + 2 * kChunk, base + 3 * kChunk, base + 4 * kChunk};
}

/// The gates of a token, in fp32 as the reference computes them: log2 of the decay g and beta.
__device__ __forceinline__ void token_gates(float a, float b, float A_log, float dt_bias,
                                            float& log2_g, float& beta) {
  const float x = a + dt_bias;
  const float softplus = x > kSoftplusThreshold ? x : log1pf(expf(x));
  log2_g = -expf(A_log) * softplus * kLog2e;
  beta = 1.0f / (1.0f + expf(-b));
}

/// Tokens of chunk `ci` of a sequence of `length` tokens.
__device__ __forceinline__ int chunk_rows(int64_t length, int ci) {
  const int64_t left = length - int64_t{ci} * kChunk;
  return left < kChunk ? static_cast<int>(left) : kChunk;
}

/// One warp loads the raw gate inputs of chunk `ci` (tokens 2 lane, 2 lane + 1; zeros past the
/// sequence's `length` tokens from `t_begin`).
__device__ __forceinline__ void load_chunk_gate_inputs(const PrefillArgs& args, int h,
                                                       int64_t t_begin, int64_t length, int ci,
                                                       float (&gate_a)[2], float (&gate_b)[2]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int64_t i = int64_t{ci} * kChunk + 2 * lane + j;
    if (i < length) {
      gate_a[j] = __bfloat162float(args.a[(t_begin + i) * kVHeads + h]);
      gate_b[j] = __bfloat162float(args.b[(t_begin + i) * kVHeads + h]);
    }
  }
}

/// One warp turns a chunk's raw gate inputs into its gate vectors: the log2-decay cumsum over the
/// chunk's `rows` tokens, beta, and the factors the products use.
__device__ __forceinline__ void compute_chunk_gates(const float (&gate_a)[2],
                                                    const float (&gate_b)[2], float A_log,
                                                    float dt_bias, int rows, ChunkGates s) {
  const int lane = threadIdx.x % 32;
  float l2[2], beta[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const bool valid = 2 * lane + j < rows;
    token_gates(gate_a[j], gate_b[j], A_log, dt_bias, l2[j], beta[j]);
    l2[j] = valid ? l2[j] : 0.f;
    beta[j] = valid ? beta[j] : 0.f;
  }
  const float pair = l2[0] + l2[1];
  float incl = pair;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const float up = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += up;
  }
  const float gamma0 = incl - pair + l2[0], gamma1 = incl;
  const int last = rows - 1;
  const float last_pair = __shfl_sync(0xffffffffu, incl, last / 2);
  const float last_first = __shfl_sync(0xffffffffu, incl - pair + l2[0], last / 2);
  const float gamma_last = last % 2 ? last_pair : last_first;
  const float gm[2] = {gamma0, gamma1};
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int i = 2 * lane + j;
    s.gamma2[i] = gm[j];
    s.beta[i] = beta[j];
    s.eg[i] = fast_exp2(gm[j]);
    s.fac[i] = i < rows ? fast_exp2(gamma_last - gm[j]) : 0.f;
  }
  if (lane == 0) *s.decay = fast_exp2(gamma_last);
}

/// A (fp32, strictly lower) into sL and, with kWithP, P (bf16 hi + lo, lower with diagonal) into
/// sP, by 16x16 blocks of the lower triangle dealt round-robin to the warps (rows of 16 tokens
/// have 1 to 4 such blocks, so whole rows per warp would leave warps idle). Rows past the last
/// tile are left alone: the inverse and everything after it stop at the last tile. Without P
/// there is one job per block, so every warp keeps working.
template <int kWarps, bool kWithP>
__device__ __forceinline__ void decay_products(const __nv_bfloat16* sK, const __nv_bfloat16* sQ,
                                               float* sL, __nv_bfloat16* sP, ChunkGates s,
                                               int tiles) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, c = lane % 4;
  const int jobs = kWithP ? tiles * (tiles + 1) : tiles * (tiles + 1) / 2;
  for (int job = warp; job < jobs; job += kWarps) {
    const int blk = kWithP ? job / 2 : job;
    const bool is_qk = kWithP && job % 2;  // K K^T -> A, or Q K^T -> P: two jobs per block
    int rt = 0;
    while ((rt + 1) * (rt + 2) / 2 <= blk) ++rt;
    const int i0 = 16 * rt, j0 = 16 * (blk - rt * (rt + 1) / 2);
    const __nv_bfloat16* rows = is_qk ? sQ : sK;
    float acc[2][4] = {};
#pragma unroll
    for (int ks = 0; ks < kHeadSize / 16; ++ks) {
      uint32_t a[4], b[4];
      ldmatrix_x4(a, rows + (i0 + lane % 16) * kLdD + 16 * ks + (lane / 16) * 8);
      ldmatrix_x4(b, sK + (j0 + lane % 8 + (lane / 16) * 8) * kLdD + 16 * ks +
                         ((lane / 8) % 2) * 8);
      mma_bf16(acc[0], a, b[0], b[1]);
      mma_bf16(acc[1], a, b[2], b[3]);
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int i = i0 + g + 8 * half, j = j0 + 8 * nt + 2 * c;
        const float gi = s.gamma2[i];
        const float e0 = j <= i ? fast_exp2(gi - s.gamma2[j]) : 0.f;
        const float e1 = j + 1 <= i ? fast_exp2(gi - s.gamma2[j + 1]) : 0.f;
        const float x0 = acc[nt][2 * half] * e0, x1 = acc[nt][2 * half + 1] * e1;
        if (!is_qk) {
          const float bi = s.beta[i];
          *reinterpret_cast<float2*>(sL + i * kLdF + j) =
              make_float2(j < i ? bi * x0 : 0.f, j + 1 < i ? bi * x1 : 0.f);
        } else {
          uint32_t hi, lo;
          split_bf16x2(x0, x1, hi, lo);
          *reinterpret_cast<uint32_t*>(sP + i * kLdC + j) = hi;
          if constexpr (kSplitOutput)
            *reinterpret_cast<uint32_t*>(sP + kChunk * kLdC + i * kLdC + j) = lo;
        }
      }
  }
}

/// Tw = X diag(beta e^gamma) and Tu = X diag(beta), lower blocks only, as bf16 hi (+ lo).
template <int kThreads>
__device__ __forceinline__ void inverse_factors(const float* sX, ChunkGates s, __nv_bfloat16* sTw,
                                                __nv_bfloat16* sTu, int tiles) {
  for (int e = threadIdx.x; e < 16 * tiles * kChunk / 2; e += kThreads) {
    const int i = e / (kChunk / 2), j = 2 * (e % (kChunk / 2));
    if (j / 16 > i / 16) continue;
    const float2 x = *reinterpret_cast<const float2*>(sX + i * kLdF + j);
    const float u0 = x.x * s.beta[j], u1 = x.y * s.beta[j + 1];
    uint32_t hi, lo;
    split_bf16x2(u0 * s.eg[j], u1 * s.eg[j + 1], hi, lo);
    *reinterpret_cast<uint32_t*>(sTw + i * kLdC + j) = hi;
    if constexpr (kSplitState) *reinterpret_cast<uint32_t*>(sTw + kChunk * kLdC + i * kLdC + j) = lo;
    split_bf16x2(u0, u1, hi, lo);
    *reinterpret_cast<uint32_t*>(sTu + i * kLdC + j) = hi;
    if constexpr (kSplitState) *reinterpret_cast<uint32_t*>(sTu + kChunk * kLdC + i * kLdC + j) = lo;
  }
}

/// -W = -Tw K into sW (bf16, kLdD rows). Row tile rt sums rt + 1 blocks of Tw, so warps split
/// the key columns; with 8 warps each takes a quarter of them over the row tiles {0, 3} or
/// {1, 2}: 5 blocks each, and twice the accumulators in flight of a one-row-at-a-time walk.
template <int kWarps>
__device__ __forceinline__ void w_product(const __nv_bfloat16* sTw, const __nv_bfloat16* sK,
                                          __nv_bfloat16* sW, int tiles) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, c = lane % 4;
  constexpr int kColGroups = kWarps < 4 ? kWarps : 4;
  constexpr int kRowSets = kWarps / kColGroups;    // 1 or 2
  constexpr int kNT = kHeadSize / kColGroups / 8;  // n-tiles of 8 key columns per warp
  const int n_first = (warp % kColGroups) * (kHeadSize / kColGroups);
  const int row_set = warp / kColGroups;
  for (int step = 0; step < 4 / kRowSets; ++step) {
    const int rt = kRowSets == 1 ? step : (step == 0 ? row_set : 3 - row_set);
    if (rt >= tiles) continue;
    const int i0 = 16 * rt;
    float w[kNT][4] = {};
    for (int ks = 0; ks <= rt; ++ks) {
      uint32_t a_hi[4], a_lo[4];
      ldmatrix_x4(a_hi, sTw + (i0 + lane % 16) * kLdC + 16 * ks + (lane / 16) * 8);
      if constexpr (kSplitState)
        ldmatrix_x4(a_lo,
                    sTw + kChunk * kLdC + (i0 + lane % 16) * kLdC + 16 * ks + (lane / 16) * 8);
#pragma unroll
      for (int p = 0; p < kNT / 2; ++p) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, sK + (16 * ks + lane % 8 + ((lane / 8) % 2) * 8) * kLdD + n_first +
                                 16 * p + (lane / 16) * 8);
        mma_bf16(w[2 * p], a_hi, b[0], b[1]);
        mma_bf16(w[2 * p + 1], a_hi, b[2], b[3]);
        if constexpr (kSplitState) {
          mma_bf16(w[2 * p], a_lo, b[0], b[1]);
          mma_bf16(w[2 * p + 1], a_lo, b[2], b[3]);
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const int col = n_first + 8 * nt + 2 * c;
      *reinterpret_cast<uint32_t*>(sW + (i0 + g) * kLdD + col) = pack_bf16x2(-w[nt][0], -w[nt][1]);
      *reinterpret_cast<uint32_t*>(sW + (i0 + g + 8) * kLdD + col) =
          pack_bf16x2(-w[nt][2], -w[nt][3]);
    }
  }
}

/// Vn^T = U^T = V^T Tu^T for this warp's 16 value rows (columns `v_col` .. +15 of sV, kLdV
/// apart) x the chunk's tokens.
template <int kLdV>
__device__ __forceinline__ void u_product(float (&vn)[8][4], const __nv_bfloat16* sV, int v_col,
                                          const __nv_bfloat16* sTu, int tiles) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    if (p >= tiles) continue;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks > p) continue;
      uint32_t a[4], b_hi[4], b_lo[4];
      ldmatrix_x4_trans(a, sV + (16 * ks + lane % 8 + (lane / 16) * 8) * kLdV + v_col +
                               ((lane / 8) % 2) * 8);
      const int b_off =
          (16 * p + lane % 8 + (lane / 16) * 8) * kLdC + 16 * ks + ((lane / 8) % 2) * 8;
      ldmatrix_x4(b_hi, sTu + b_off);
      mma_bf16(vn[2 * p], a, b_hi[0], b_hi[1]);
      mma_bf16(vn[2 * p + 1], a, b_hi[2], b_hi[3]);
      if constexpr (kSplitState) {
        ldmatrix_x4(b_lo, sTu + kChunk * kLdC + b_off);
        mma_bf16(vn[2 * p], a, b_lo[0], b_lo[1]);
        mma_bf16(vn[2 * p + 1], a, b_lo[2], b_lo[3]);
      }
    }
  }
}

/// Vn^T += M (-W)^T and, with kWithO, O^T = M Q^T, sharing M's A fragments (hi, and lo for Vn).
/// M holds key columns k0 .. k0 + 8 kKeyTiles - 1 (all 128 unless the key columns are split
/// over warps), and the products sum over those only.
template <bool kWithO, int kKeyTiles = 16>
__device__ __forceinline__ void state_products(float (&vn)[8][4], float (&o)[8][4],
                                               const float (&M)[kKeyTiles][4],
                                               const __nv_bfloat16* sW, const __nv_bfloat16* sQ,
                                               int tiles, int k0 = 0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int ks = 0; ks < kKeyTiles / 2; ++ks) {
    uint32_t m_hi[4], m_lo[4];
    split_a_fragment(M[2 * ks], M[2 * ks + 1], m_hi, m_lo);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      if (p >= tiles) continue;
      const int b_off =
          (16 * p + lane % 8 + (lane / 16) * 8) * kLdD + k0 + 16 * ks + ((lane / 8) % 2) * 8;
      uint32_t bw[4], bq[4];
      ldmatrix_x4(bw, sW + b_off);
      if constexpr (kWithO) ldmatrix_x4(bq, sQ + b_off);
      mma_bf16(vn[2 * p], m_hi, bw[0], bw[1]);
      mma_bf16(vn[2 * p + 1], m_hi, bw[2], bw[3]);
      if constexpr (kSplitState) {
        mma_bf16(vn[2 * p], m_lo, bw[0], bw[1]);
        mma_bf16(vn[2 * p + 1], m_lo, bw[2], bw[3]);
      }
      if constexpr (kWithO) {
        mma_bf16(o[2 * p], m_hi, bq[0], bq[1]);
        mma_bf16(o[2 * p + 1], m_hi, bq[2], bq[3]);
        if constexpr (kSplitOutput) {
          mma_bf16(o[2 * p], m_lo, bq[0], bq[1]);
          mma_bf16(o[2 * p + 1], m_lo, bq[2], bq[3]);
        }
      }
    }
  }
}

/// O^T = (O^T diag(e^gamma) + Vn^T P^T) scale, in place in `o`.
__device__ __forceinline__ void output_products(float (&o)[8][4], const float (&vn)[8][4],
                                                const __nv_bfloat16* sP, const float* eg,
                                                float scale, int tiles) {
  const int lane = threadIdx.x % 32, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const float e0 = eg[8 * nt + 2 * c], e1 = eg[8 * nt + 2 * c + 1];
    o[nt][0] *= e0, o[nt][1] *= e1, o[nt][2] *= e0, o[nt][3] *= e1;
  }
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    if (ks >= tiles) continue;
    uint32_t a_hi[4], a_lo[4];
    split_a_fragment(vn[2 * ks], vn[2 * ks + 1], a_hi, a_lo);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      if (p < ks || p >= tiles) continue;
      const int b_off =
          (16 * p + lane % 8 + (lane / 16) * 8) * kLdC + 16 * ks + ((lane / 8) % 2) * 8;
      uint32_t b[4];
      ldmatrix_x4(b, sP + b_off);
      mma_bf16(o[2 * p], a_hi, b[0], b[1]);
      mma_bf16(o[2 * p + 1], a_hi, b[2], b[3]);
      if constexpr (kSplitOutput) {
        uint32_t b_lo[4];
        ldmatrix_x4(b_lo, sP + kChunk * kLdC + b_off);
        mma_bf16(o[2 * p], a_lo, b[0], b[1]);
        mma_bf16(o[2 * p + 1], a_lo, b[2], b[3]);
        mma_bf16(o[2 * p], a_hi, b_lo[0], b_lo[1]);
        mma_bf16(o[2 * p + 1], a_hi, b_lo[2], b_lo[3]);
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int r = 0; r < 4; ++r) o[nt][r] *= scale;
}

constexpr int kLdO = 16 + 8;  // bf16 row stride of a warp's output staging (16 values)

/// This warp's O^T (16 value rows from `v_first` x the chunk's `rows` tokens from t0) to the
/// output, through its staging tile sO (kChunk x kLdO bf16).
__device__ __forceinline__ void store_output(const float (&o)[8][4], __nv_bfloat16* sO,
                                             __nv_bfloat16* output, int64_t t0, int h,
                                             int v_first, int rows) {
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const int t = 8 * nt + 2 * c;
    sO[t * kLdO + g] = __float2bfloat16_rn(o[nt][0]);
    sO[(t + 1) * kLdO + g] = __float2bfloat16_rn(o[nt][1]);
    sO[t * kLdO + g + 8] = __float2bfloat16_rn(o[nt][2]);
    sO[(t + 1) * kLdO + g + 8] = __float2bfloat16_rn(o[nt][3]);
  }
  __syncwarp();
  for (int q = lane; q < 2 * rows; q += 32) {
    const int t = q / 2, half = q % 2;
    *reinterpret_cast<uint4*>(output + ((t0 + t) * kVHeads + h) * kHeadSize + v_first +
                              8 * half) = *reinterpret_cast<const uint4*>(sO + t * kLdO + 8 * half);
  }
}

/// M = e^gamma_last M + (Vn^T diag(fac)) K, for M's key columns k0 .. k0 + 8 kKeyTiles - 1.
template <int kKeyTiles = 16>
__device__ __forceinline__ void state_update(float (&M)[kKeyTiles][4], const float (&vn)[8][4],
                                             const __nv_bfloat16* sK, const float* fac,
                                             float decay, int tiles, int k0 = 0) {
  const int lane = threadIdx.x % 32, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
    for (int r = 0; r < 4; ++r) M[nt][r] *= decay;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    if (ks >= tiles) continue;
    const float f0 = fac[16 * ks + 2 * c], f1 = fac[16 * ks + 2 * c + 1];
    const float f2 = fac[16 * ks + 8 + 2 * c], f3 = fac[16 * ks + 8 + 2 * c + 1];
    uint32_t a_hi[4], a_lo[4];
    split_a_fragment(vn[2 * ks], vn[2 * ks + 1], a_hi, a_lo, f0, f1, f2, f3);
#pragma unroll
    for (int p = 0; p < kKeyTiles / 2; ++p) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sK + (16 * ks + lane % 8 + ((lane / 8) % 2) * 8) * kLdD + k0 + 16 * p +
                               (lane / 16) * 8);
      mma_bf16(M[2 * p], a_hi, b[0], b[1]);
      mma_bf16(M[2 * p + 1], a_hi, b[2], b[3]);
      if constexpr (kSplitState) {
        mma_bf16(M[2 * p], a_lo, b[0], b[1]);
        mma_bf16(M[2 * p + 1], a_lo, b[2], b[3]);
      }
    }
  }
}

}  // namespace khk::gdn_prefill
