// The block-solve route's sizes and shared memory (route_block_solve.cuh).
//
// One CTA per (sequence, value head, tile of kSolveRows value rows) walks its sequence in spans of
// kSolveSpan tokens. Within a span the delta rule is the chunked form with C = 64
// (small_chunk_producer.cuh has the algebra, with lg the cumulative log2 decay from the span's
// start and M the state rows, M = S^T, at its start):
//   (I + A) delta = diag(beta) (V - Gamma K M^T),   A[t][i] = beta_t 2^(lg_t - lg_i) k_t . k_i  (i < t)
// but the triangular system is solved over the span's four 16-token blocks by substitution,
//   delta_b = X_b (diag(beta_b) R_b - sum_{j < b} A_bj delta_j),   X_b = (I + A_bb)^-1,
// so the only serial work between two state updates is four 16 x 16 x 16 steps per 16 value rows;
// the state products (D = M K^T, Dq = M Q^T, the update) run once per 64 tokens, spread over
// every warp, instead of once per 16 tokens on the chain warps as in the small-chunk route. The
// price is the span's 64 x 64 Gram products (K K^T, Q K^T), recomputed by every row tile of a
// head: at the short sequences this route takes, the SMs are idle anyway.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "gdn_prefill.cuh"

namespace khk::gdn_prefill {

constexpr int kSolveSpan = 64;                              // tokens per span
constexpr int kSolveBlock = 16;                             // tokens per substitution block
constexpr int kSolveBlocks = kSolveSpan / kSolveBlock;      // 4
constexpr int kSolveGroups = 2;                             // groups of 16 value rows per CTA
constexpr int kSolveRows = 16 * kSolveGroups;               // value rows per CTA
constexpr int kSolveTilesPerHead = kHeadSize / kSolveRows;  // CTAs per (sequence, head)
constexpr int kSolveWarps = 8;
constexpr int kSolveThreads = 32 * kSolveWarps;

// Row strides, padded so that ldmatrix and the fragment loads spread over the banks.
constexpr int kSolveKStride = kHeadSize + 8;   // bf16, K and Q rows
constexpr int kSolveVStride = kSolveRows + 8;  // bf16, V rows (the tile's value columns)
constexpr int kSolveMStride = kHeadSize + 4;   // fp32, state rows
constexpr int kSolveTStride = kSolveSpan + 4;  // fp32, per-token rows (D, Dq, delta)

// The span's 16 x 16 blocks (b, j) of the token-token matrices: j <= b (10, P) and j < b (6, A).
constexpr int kSolveLowerBlocks = kSolveBlocks * (kSolveBlocks + 1) / 2;
constexpr int kSolveStrictBlocks = kSolveBlocks * (kSolveBlocks - 1) / 2;
__host__ __device__ constexpr int solve_lower_index(int b, int j) { return b * (b + 1) / 2 + j; }
__host__ __device__ constexpr int solve_strict_index(int b, int j) { return b * (b - 1) / 2 + j; }

/// One span's inputs: K, Q and the tile's V columns of its tokens (zero past the sequence), and
/// the bf16 pairs of a and b that hold head h's gates.
struct SolveTiles {
  __nv_bfloat16 k[kSolveSpan][kSolveKStride];
  __nv_bfloat16 q[kSolveSpan][kSolveKStride];
  __nv_bfloat16 v[kSolveSpan][kSolveVStride];
  uint32_t a[kSolveSpan];
  uint32_t b[kSolveSpan];
};

/// An MMA B fragment of a 16 x 16 block as bf16 hi + lo (x, y: hi; z, w: lo), per n-tile and lane.
using SolveFragment = uint4[2][32];

struct SolveSmem {
  SolveTiles tiles[2];                     // the span and the next one, in flight
  float m[kSolveRows][kSolveMStride];      // the state rows M = S^T at the span's start
  float d[kSolveRows][kSolveTStride];      // D = M K^T
  float dq[kSolveRows][kSolveTStride];     // Dq = M Q^T
  float delta[kSolveRows][kSolveTStride];  // delta^T
  float lg[kSolveSpan];                    // cumulative log2 decay from the span's start
  float beta[kSolveSpan];
  float gamma[kSolveSpan];                 // 2^lg
  float sgamma[kSolveSpan];                // scale 2^lg
  float w[kSolveSpan];                     // 2^(lg_last - lg)
  float gamma_last;
  float adiag[kSolveBlocks][kSolveBlock][kSolveBlock + 1];  // A_bb, then X_b (fp32)
  SolveFragment neg_a[kSolveStrictBlocks];                  // -A_bj^T, j < b
  SolveFragment p[kSolveLowerBlocks];                       // (scale P_bj)^T, j <= b
  SolveFragment x[kSolveBlocks];                            // X_b^T
  uint4 delta_a[kSolveGroups][kSolveBlocks][2][32];         // delta_j^T A fragments (hi, lo)
};

}  // namespace khk::gdn_prefill
