// The inverse of a chunk's 64x64 unit lower-triangular matrix L = I + A (the "UT transform" of the
// chunked delta rule), in fp32 shared memory, by a whole CTA.
//
//   1. The four 16x16 diagonal blocks by forward substitution, one thread per (block, column):
//      x_r = [r == c] - sum_{j<r} L[r][j] x_j needs no barrier and no branch on the column.
//   2. Doubling, 16 -> 32 -> 64, with the block formula [[P, 0], [R, Q]]^-1 =
//      [[P^-1, 0], [-Q^-1 R P^-1, Q^-1]]: first both 32x32 diagonal blocks, then the 32x32
//      lower-left block. Each is two products on the tensor cores in 3xTF32 (hi*hi + hi*lo +
//      lo*hi: about 21 mantissa bits, near fp32), with R P^-1 parked in L's upper triangle, which
//      nothing else reads.
//
// X's upper block that the products read (X[0:16][16:32], in the 32 -> 64 step) must be zero:
// zero_inverse_upper() writes it (and X[32:48][48:64]) once per CTA; nothing writes them later.
// At most four barriers inside; the caller synchronises before (L complete) and after (X complete).
#pragma once

#include "mma_tiles.cuh"

namespace khk::gdn_prefill {

constexpr int kChunk = 64;        // tokens per chunk
constexpr int kLdF = kChunk + 4;  // fp32 row stride of L and X (floats)

/// X[0:16][16:32] and X[32:48][48:64] = 0: the zero blocks the doubling products read.
template <int kThreads>
__device__ __forceinline__ void zero_inverse_upper(float* X) {
  for (int i = threadIdx.x; i < 2 * 16 * 16; i += kThreads) {
    const int block = i / 256, r = (i / 16) % 16, c = i % 16;
    X[(32 * block + r) * kLdF + 32 * block + 16 + c] = 0.f;
  }
}

/// out[16][16] = sign * A[16][K] * B[K][16] for one warp, fp32 in and out, 3xTF32 on the tensor
/// cores. A, B, out point at the blocks' top-left elements; all rows are kLdF floats apart.
template <int K>
__device__ __forceinline__ void tf32_block_product(float* out, const float* A, const float* B,
                                                   float sign) {
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  float acc[2][4] = {};
#pragma unroll
  for (int kk = 0; kk < K; kk += 8) {
    uint32_t a_hi[4], a_lo[4];
    split_tf32(A[g * kLdF + kk + c], a_hi[0], a_lo[0]);
    split_tf32(A[(g + 8) * kLdF + kk + c], a_hi[1], a_lo[1]);
    split_tf32(A[g * kLdF + kk + c + 4], a_hi[2], a_lo[2]);
    split_tf32(A[(g + 8) * kLdF + kk + c + 4], a_hi[3], a_lo[3]);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      uint32_t b0_hi, b0_lo, b1_hi, b1_lo;
      split_tf32(B[(kk + c) * kLdF + 8 * nt + g], b0_hi, b0_lo);
      split_tf32(B[(kk + c + 4) * kLdF + 8 * nt + g], b1_hi, b1_lo);
      mma_tf32(acc[nt], a_lo, b0_hi, b1_hi);
      mma_tf32(acc[nt], a_hi, b0_lo, b1_lo);
      mma_tf32(acc[nt], a_hi, b0_hi, b1_hi);
    }
  }
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    float* o = out + 8 * nt + 2 * c;
    o[g * kLdF] = sign * acc[nt][0];
    o[g * kLdF + 1] = sign * acc[nt][1];
    o[(g + 8) * kLdF] = sign * acc[nt][2];
    o[(g + 8) * kLdF + 1] = sign * acc[nt][3];
  }
}

/// X = L^-1 for L = I + A, A strictly lower (its diagonal and upper triangle are not read; the
/// upper triangle is overwritten as scratch), on the first `tiles` 16-row tiles only: a partial
/// chunk's rows past its last tile are neither read nor written (nothing downstream reads them).
/// Called by all kThreads threads of the CTA; the branches on `tiles` are uniform.
template <int kThreads>
__device__ __forceinline__ void invert_unit_lower(float* L, float* X, int tiles) {
  constexpr int kWarps = kThreads / 32;
  const int warp = threadIdx.x / 32;

  // 1. Diagonal blocks.
  for (int job = threadIdx.x; job < tiles * 16; job += kThreads) {
    const int base = 16 * (job / 16), col = job % 16;
    const float* Lb = L + base * kLdF + base;
    float x[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      float s = r == col ? 1.f : 0.f;
#pragma unroll
      for (int j = 0; j < r; ++j) s -= Lb[r * kLdF + j] * x[j];
      x[r] = s;
    }
    float* Xb = X + base * kLdF + base + col;
#pragma unroll
    for (int r = 0; r < 16; ++r) Xb[r * kLdF] = x[r];
  }
  if (tiles == 1) return;
  __syncthreads();

  // 2a. 16 -> 32, for the diagonal 32-blocks at 0 and 32 (the second one only if its lower half
  // holds tokens): R P^-1 into L's block above R.
  const int pairs = tiles / 2;
  for (int p = warp; p < pairs; p += kWarps) {
    const int o = 32 * p;
    tf32_block_product<16>(L + o * kLdF + o + 16, L + (o + 16) * kLdF + o, X + o * kLdF + o, 1.f);
  }
  __syncthreads();
  for (int p = warp; p < pairs; p += kWarps) {
    const int o = 32 * p;
    tf32_block_product<16>(X + (o + 16) * kLdF + o, X + (o + 16) * kLdF + o + 16,
                           L + o * kLdF + o + 16, -1.f);
  }
  if (tiles <= 2) return;
  __syncthreads();

  // 2b. 32 -> 64: R = L[32:64][0:32], P^-1 = X[0:32][0:32], Q^-1 = X[32:64][32:64]. R P^-1 goes
  // to L[0:32][32:64]; each warp does 16x16 output blocks (mt, nh), rows 48-63 only with 4 tiles.
  const int units = 2 * (tiles - 2);
  for (int u = warp; u < units; u += kWarps) {
    const int mt = u / 2, nh = u % 2;
    tf32_block_product<32>(L + 16 * mt * kLdF + 32 + 16 * nh, L + (32 + 16 * mt) * kLdF,
                           X + 16 * nh, 1.f);
  }
  __syncthreads();
  // Rows 32-47 of Q^-1 are zero past column 47, so their block needs only the first 16 rows of
  // R P^-1 (the only ones written when rows 48-63 hold no tokens).
  for (int u = warp; u < units; u += kWarps) {
    const int mt = u / 2, nh = u % 2;
    float* out = X + (32 + 16 * mt) * kLdF + 16 * nh;
    const float* q_inv = X + (32 + 16 * mt) * kLdF + 32;
    if (mt == 0)
      tf32_block_product<16>(out, q_inv, L + 32 + 16 * nh, -1.f);
    else
      tf32_block_product<32>(out, q_inv, L + 32 + 16 * nh, -1.f);
  }
}

}  // namespace khk::gdn_prefill
