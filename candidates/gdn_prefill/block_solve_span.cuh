// The block-solve route's work on one span (block_solve_layout.h has the algebra and the shared
// memory; route_block_solve.cuh the CTA's loop). Each function is one warp's share of a phase;
// the CTA barriers between the phases are the caller's.
//
// MMA fragments as in mma_tiles.cuh (g = lane / 4, c = lane % 4). The value rows are the MMA's
// M dimension throughout, as on the small-chunk route's chain, so an accumulator pair of 16 rows
// x 16 tokens is directly the A fragment of the next product; a 16 x 16 block of a token-token
// matrix computed as rows t x columns i is, lane for lane, the B fragment of its transpose
// (B[k = i][n = t]), so the Gram products become the substitution's and the outputs' operands
// without moving data between lanes.
#pragma once

#include "block_solve_layout.h"
#include "small_chunk_chain.cuh"     // split_a_truncated, split_bf16x2_truncated
#include "small_chunk_producer.cuh"  // copy_4b_async, pair_half, token_gates

namespace khk::gdn_prefill {

/// Requests tokens [t0, t0 + count) (count <= kSolveSpan; zeros past them) of head h into
/// `tiles`: K and Q rows, the tile's V columns from row0, the gate pairs (all threads; the caller
/// commits).
__device__ __forceinline__ void solve_request(const PrefillArgs& args, SolveTiles& tiles,
                                              int64_t t0, int count, int h, int row0, int tid) {
  const int qk = h / kGvaRatio;
  constexpr int kPieces = kHeadSize / 8;  // 16-byte pieces of a K or Q row
  for (int u = tid; u < kSolveSpan * kPieces; u += kSolveThreads) {
    const int token = u / kPieces, piece = u % kPieces;
    const bool valid = token < count;
    const int64_t at = ((t0 + (valid ? token : 0)) * kQKHeads + qk) * kHeadSize + piece * 8;
    copy_16b_async(&tiles.k[token][piece * 8], args.k + at, valid);
    copy_16b_async(&tiles.q[token][piece * 8], args.q + at, valid);
  }
  constexpr int kVPieces = kSolveRows / 8;
  for (int u = tid; u < kSolveSpan * kVPieces; u += kSolveThreads) {
    const int token = u / kVPieces, piece = u % kVPieces;
    const bool valid = token < count;
    const int64_t at = ((t0 + (valid ? token : 0)) * kVHeads + h) * kHeadSize + row0 + piece * 8;
    copy_16b_async(&tiles.v[token][piece * 8], args.v + at, valid);
  }
  if (tid < 2 * kSolveSpan) {
    const int token = tid % kSolveSpan;
    const bool valid = token < count;
    const int64_t at = (t0 + (valid ? token : 0)) * kVHeads + (h & ~1);
    if (tid < kSolveSpan) copy_4b_async(&tiles.a[token], args.a + at, valid);
    else copy_4b_async(&tiles.b[token], args.b + at, valid);
  }
}

/// The span's gates (one warp; lane l takes tokens 2l and 2l + 1): beta, the cumulative log2
/// decay lg and the scalings derived from it. Tokens past `count` have zero decay and beta.
__device__ __forceinline__ void solve_gates(const SolveTiles& tiles, SolveSmem& s, int count,
                                            int h, float A_log, float dt_bias, float scale,
                                            int lane) {
  float lg[2] = {0.0f, 0.0f}, beta[2] = {0.0f, 0.0f};
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int t = 2 * lane + e;
    if (t < count)
      token_gates(pair_half(tiles.a[t], h), pair_half(tiles.b[t], h), A_log, dt_bias, lg[e],
                  beta[e]);
  }
  // Inclusive scan of the pairs' sums over the lanes, then each pair from the lanes below it.
  float total = lg[0] + lg[1];
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const float below = __shfl_up_sync(0xffffffffu, total, offset);
    if (lane >= offset) total += below;
  }
  float before = __shfl_up_sync(0xffffffffu, total, 1);
  if (lane == 0) before = 0.0f;
  const float cum[2] = {before + lg[0], before + lg[0] + lg[1]};
  const float last = __shfl_sync(0xffffffffu, cum[1], 31);
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int t = 2 * lane + e;
    const float gamma = fast_exp2(cum[e]);
    s.lg[t] = cum[e];
    s.beta[t] = beta[e];
    s.gamma[t] = gamma;
    s.sgamma[t] = scale * gamma;
    s.w[t] = fast_exp2(fminf(last - cum[e], 0.0f));
  }
  if (lane == 0) s.gamma_last = fast_exp2(last);
}

// The Gram products of a span: items 0-3 the diagonal blocks of K K^T (warp b takes block b and
// then solves it), 4-9 its blocks below the diagonal, 10-19 the blocks of Q K^T on and below it.
// Warp w takes items w, w + 8, w + 16.
constexpr int kSolveGramItems = kSolveBlocks + kSolveStrictBlocks + kSolveLowerBlocks;
constexpr int kSolveGramSlots = (kSolveGramItems + kSolveWarps - 1) / kSolveWarps;

struct SolveGramItem {
  bool query;  // Q K^T, else K K^T
  int b, j;    // row block (tokens t), column block (tokens i)
};

__device__ __forceinline__ SolveGramItem solve_gram_item(int item) {
  if (item < kSolveBlocks) return {false, item, item};
  int index = item < kSolveBlocks + kSolveStrictBlocks ? item - kSolveBlocks
                                                       : item - kSolveBlocks - kSolveStrictBlocks;
  const bool query = item >= kSolveBlocks + kSolveStrictBlocks;
  // Row-major order over the lower (query) or strictly lower (keys) triangle.
  int b = query ? 0 : 1;
  while (index > (query ? b : b - 1)) index -= query ? b + 1 : b, ++b;
  return {query, b, index};
}

/// Rows t of block b of Q (query) or K times rows i of block j of K: acc[nt][e] holds
/// (t = g + 8 (e / 2), i = 8 nt + 2c + e % 2) of the block, exact bf16 products in fp32 sums.
__device__ __forceinline__ void solve_gram(const SolveTiles& tiles, SolveGramItem it,
                                           float (&acc)[2][4], int lane) {
  const int m = lane / 8, r = lane % 8;
  const int a_row = 16 * it.b + (m % 2) * 8 + r, a_col = (m / 2) * 8;
  const int b_row = 16 * it.j + (m / 2) * 8 + r, b_col = (m % 2) * 8;
  const __nv_bfloat16(*rows)[kSolveKStride] = it.query ? tiles.q : tiles.k;
#pragma unroll
  for (int e = 0; e < 4; ++e) acc[0][e] = acc[1][e] = 0.0f;
#pragma unroll
  for (int st = 0; st < kHeadSize / 16; ++st) {
    uint32_t xa[4], kb[4];
    ldmatrix_x4(xa, &rows[a_row][16 * st + a_col]);
    ldmatrix_x4(kb, &tiles.k[b_row][16 * st + b_col]);
    mma_bf16(acc[0], xa, kb[0], kb[1]);
    mma_bf16(acc[1], xa, kb[2], kb[3]);
  }
}

/// A Gram block with its decays (after the gates): A_bb into s.adiag, -A_bj (j < b) or scale
/// P_bj as the B fragments of their transposes. Row t of a fragment's n-tile o is t = 8 o + g,
/// and its k rows 2c, 2c + 1 | 2c + 8, 2c + 9 are this lane's columns of n-tiles 0 | 1.
__device__ __forceinline__ void solve_gram_epilogue(SolveSmem& s, SolveGramItem it,
                                                    const float (&acc)[2][4], float scale,
                                                    int lane) {
  const int g = lane / 4, c = lane % 4;
  float x[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = 16 * it.b + g + 8 * (e / 2), i = 16 * it.j + 8 * nt + 2 * c + e % 2;
      const float decay = fast_exp2(fminf(s.lg[t] - s.lg[i], 0.0f));
      if (it.query) x[nt][e] = i <= t ? scale * decay * acc[nt][e] : 0.0f;
      else x[nt][e] = i < t ? s.beta[t] * decay * acc[nt][e] : 0.0f;
    }
  if (!it.query && it.b == it.j) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s.adiag[it.b][g + 8 * (e / 2)][8 * nt + 2 * c + e % 2] = x[nt][e];
    return;
  }
  SolveFragment& f = it.query ? s.p[solve_lower_index(it.b, it.j)]
                              : s.neg_a[solve_strict_index(it.b, it.j)];
  const float sign = it.query ? 1.0f : -1.0f;
#pragma unroll
  for (int o = 0; o < 2; ++o) {
    uint32_t hi0, lo0, hi1, lo1;
    split_bf16x2_truncated(sign * x[0][2 * o], sign * x[0][2 * o + 1], hi0, lo0);
    split_bf16x2_truncated(sign * x[1][2 * o], sign * x[1][2 * o + 1], hi1, lo1);
    f[o][lane] = make_uint4(hi0, hi1, lo0, lo1);
  }
}

/// X_b = (I + A_bb)^-1 by forward substitution in fp32 (lane j < 16 holds column j), in place of
/// A_bb, and X_b^T's B fragments (warp b, after its own epilogue of block b).
__device__ __forceinline__ void solve_diagonal(SolveSmem& s, int b, int lane) {
  float(&a)[kSolveBlock][kSolveBlock + 1] = s.adiag[b];
  const int j = lane % kSolveBlock;
  float x[kSolveBlock];
#pragma unroll
  for (int t = 0; t < kSolveBlock; ++t) x[t] = t == j ? 1.0f : 0.0f;
#pragma unroll
  for (int i = 0; i < kSolveBlock; ++i)
#pragma unroll
    for (int t = i + 1; t < kSolveBlock; ++t) x[t] = fmaf(-a[t][i], x[i], x[t]);
  __syncwarp();  // every lane has read A_bb
  if (lane < kSolveBlock)
#pragma unroll
    for (int t = 0; t < kSolveBlock; ++t) a[t][j] = x[t];
  __syncwarp();
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int o = 0; o < 2; ++o) {
    const int t = 8 * o + g;
    uint32_t hi0, lo0, hi1, lo1;
    split_bf16x2_truncated(a[t][2 * c], a[t][2 * c + 1], hi0, lo0);
    split_bf16x2_truncated(a[t][2 * c + 8], a[t][2 * c + 9], hi1, lo1);
    s.x[b][o][lane] = make_uint4(hi0, hi1, lo0, lo1);
  }
}

/// Loads the A fragment of 16 rows x 16 columns from col0 of an fp32 matrix in shared memory
/// (rows of `stride` floats from row0), as two accumulator tiles.
template <int kStride>
__device__ __forceinline__ void solve_load_tiles(const float (*rows)[kStride], int row0, int col0,
                                                 float (&left)[4], float (&right)[4], int lane) {
  const int g = lane / 4, c = lane % 4;
  const float2 a = *reinterpret_cast<const float2*>(&rows[row0 + g][col0 + 2 * c]);
  const float2 b = *reinterpret_cast<const float2*>(&rows[row0 + g + 8][col0 + 2 * c]);
  const float2 e = *reinterpret_cast<const float2*>(&rows[row0 + g][col0 + 8 + 2 * c]);
  const float2 f = *reinterpret_cast<const float2*>(&rows[row0 + g + 8][col0 + 8 + 2 * c]);
  left[0] = a.x, left[1] = a.y, left[2] = b.x, left[3] = b.y;
  right[0] = e.x, right[1] = e.y, right[2] = f.x, right[3] = f.y;
}

/// Stores two accumulator tiles (16 rows x 16 columns from col0) into an fp32 matrix.
template <int kStride>
__device__ __forceinline__ void solve_store_tiles(float (*rows)[kStride], int row0, int col0,
                                                  const float (&t)[2][4], int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    *reinterpret_cast<float2*>(&rows[row0 + g][col0 + 8 * nt + 2 * c]) = make_float2(t[nt][0], t[nt][1]);
    *reinterpret_cast<float2*>(&rows[row0 + g + 8][col0 + 8 * nt + 2 * c]) =
        make_float2(t[nt][2], t[nt][3]);
  }
}

/// D and Dq of row group `group` for the tokens of block b: M (hi + lo) times K and Q (exact).
__device__ __forceinline__ void solve_state_products(SolveSmem& s, const SolveTiles& tiles,
                                                     int group, int b, int lane) {
  const int mi = lane / 8, r = lane % 8;
  float dk[2][2][4] = {}, dq[2][2][4] = {};  // [hi | lo][n-tile]
#pragma unroll
  for (int st = 0; st < kHeadSize / 16; ++st) {
    float left[4], right[4];
    uint32_t hi[4], lo[4], kb[4], qb[4];
    solve_load_tiles<kSolveMStride>(s.m, 16 * group, 16 * st, left, right, lane);
    split_a_truncated(left, right, hi, lo);
    ldmatrix_x4(kb, &tiles.k[16 * b + (mi / 2) * 8 + r][16 * st + (mi % 2) * 8]);
    ldmatrix_x4(qb, &tiles.q[16 * b + (mi / 2) * 8 + r][16 * st + (mi % 2) * 8]);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      mma_bf16(dk[0][nt], hi, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dk[1][nt], lo, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dq[0][nt], hi, qb[2 * nt], qb[2 * nt + 1]);
      mma_bf16(dq[1][nt], lo, qb[2 * nt], qb[2 * nt + 1]);
    }
  }
  float d[2][4], q[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) add_tiles(dk[0][nt], dk[1][nt], d[nt]), add_tiles(dq[0][nt], dq[1][nt], q[nt]);
  solve_store_tiles<kSolveTStride>(s.d, 16 * group, 16 * b, d, lane);
  solve_store_tiles<kSolveTStride>(s.dq, 16 * group, 16 * b, q, lane);
}

/// The substitution for row group `group` over the span's first `blocks` blocks (one warp):
/// delta_b^T = (R_b^T diag(beta_b) - sum_{j<b} delta_j^T A_bj^T) X_b^T, with R^T = V^T - D Gamma;
/// delta^T into s.delta (fp32) and s.delta_a (A fragments, hi + lo).
__device__ __forceinline__ void solve_substitute(SolveSmem& s, const SolveTiles& tiles, int group,
                                                 int blocks, int lane) {
  const int g = lane / 4, c = lane % 4;
  uint32_t dhi[kSolveBlocks][4], dlo[kSolveBlocks][4];
#pragma unroll
  for (int b = 0; b < kSolveBlocks; ++b) {
    if (b >= blocks) break;
    float y[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = 16 * group + g + 8 * (e / 2), t = 16 * b + 8 * nt + 2 * c + e % 2;
        const float v = __bfloat162float(tiles.v[t][row]);
        y[nt][e] = s.beta[t] * (v - s.gamma[t] * s.d[row][t]);
      }
#pragma unroll
    for (int j = 0; j < b; ++j)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint4 a = s.neg_a[solve_strict_index(b, j)][nt][lane];
        mma_bf16(y[nt], dhi[j], a.x, a.y);
        mma_bf16(y[nt], dhi[j], a.z, a.w);
        mma_bf16(y[nt], dlo[j], a.x, a.y);
      }
    uint32_t yhi[4], ylo[4];
    split_a_truncated(y[0], y[1], yhi, ylo);
    float delta[2][4] = {};
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint4 x = s.x[b][nt][lane];
      mma_bf16(delta[nt], yhi, x.x, x.y);
      mma_bf16(delta[nt], yhi, x.z, x.w);
      mma_bf16(delta[nt], ylo, x.x, x.y);
    }
    split_a_truncated(delta[0], delta[1], dhi[b], dlo[b]);
    s.delta_a[group][b][0][lane] = make_uint4(dhi[b][0], dhi[b][1], dhi[b][2], dhi[b][3]);
    s.delta_a[group][b][1][lane] = make_uint4(dlo[b][0], dlo[b][1], dlo[b][2], dlo[b][3]);
    solve_store_tiles<kSolveTStride>(s.delta, 16 * group, 16 * b, delta, lane);
  }
}

/// The outputs of row group `group` for block b's tokens below `count`:
/// O^T = Dq diag(scale gamma) + sum_{j <= b} delta_j^T (scale P_bj)^T, bf16 to `out` (token t's
/// row at out[t * 8 * 128]; `out` at the span's first token and the CTA's first row).
__device__ __forceinline__ void solve_outputs(const SolveSmem& s, int group, int b, int count,
                                              __nv_bfloat16* out, int lane) {
  const int g = lane / 4, c = lane % 4;
  float o[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * group + g + 8 * (e / 2), t = 16 * b + 8 * nt + 2 * c + e % 2;
      o[nt][e] = s.dq[row][t] * s.sgamma[t];
    }
#pragma unroll
  for (int j = 0; j < kSolveBlocks; ++j) {
    if (j > b) break;
    const uint4 h4 = s.delta_a[group][j][0][lane], l4 = s.delta_a[group][j][1][lane];
    const uint32_t dh[4] = {h4.x, h4.y, h4.z, h4.w}, dl[4] = {l4.x, l4.y, l4.z, l4.w};
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint4 p = s.p[solve_lower_index(b, j)][nt][lane];
      mma_bf16(o[nt], dh, p.x, p.y);
      mma_bf16(o[nt], dh, p.z, p.w);
      mma_bf16(o[nt], dl, p.x, p.y);
    }
  }
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * group + g + 8 * (e / 2), t = 16 * b + 8 * nt + 2 * c + e % 2;
      if (t < count) store_output(out + int64_t{t} * kVHeads * kHeadSize + row, o[nt][e]);
    }
}

/// The state update of row group `group` over keys [32 quarter, 32 quarter + 32):
/// M = gamma_last M + (delta^T diag(w)) K over the span's first `blocks` blocks, in s.m.
__device__ __forceinline__ void solve_update(SolveSmem& s, const SolveTiles& tiles, int group,
                                             int quarter, int blocks, int lane) {
  const int g = lane / 4, c = lane % 4, mi = lane / 8, r = lane % 8;
  const int key0 = 32 * quarter, row = 16 * group + g;
  float acc[4][4];
  const float decay = s.gamma_last;
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    const float2 top = *reinterpret_cast<const float2*>(&s.m[row][key0 + 8 * n + 2 * c]);
    const float2 bottom = *reinterpret_cast<const float2*>(&s.m[row + 8][key0 + 8 * n + 2 * c]);
    acc[n][0] = decay * top.x, acc[n][1] = decay * top.y;
    acc[n][2] = decay * bottom.x, acc[n][3] = decay * bottom.y;
  }
#pragma unroll
  for (int j = 0; j < kSolveBlocks; ++j) {
    if (j >= blocks) break;
    float left[4], right[4];
    uint32_t whi[4], wlo[4];
    solve_load_tiles<kSolveTStride>(s.delta, 16 * group, 16 * j, left, right, lane);
    const float* w = &s.w[16 * j];
    split_a_truncated(left, right, whi, wlo, w[2 * c], w[2 * c + 1], w[8 + 2 * c], w[9 + 2 * c]);
#pragma unroll
    for (int n2 = 0; n2 < 2; ++n2) {
      uint32_t kb[4];
      ldmatrix_x4_trans(kb, &tiles.k[16 * j + (mi % 2) * 8 + r][key0 + 8 * (2 * n2 + mi / 2)]);
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        mma_bf16(acc[2 * n2 + jj], whi, kb[2 * jj], kb[2 * jj + 1]);
        mma_bf16(acc[2 * n2 + jj], wlo, kb[2 * jj], kb[2 * jj + 1]);
      }
    }
  }
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    *reinterpret_cast<float2*>(&s.m[row][key0 + 8 * n + 2 * c]) = make_float2(acc[n][0], acc[n][1]);
    *reinterpret_cast<float2*>(&s.m[row + 8][key0 + 8 * n + 2 * c]) =
        make_float2(acc[n][2], acc[n][3]);
  }
}

}  // namespace khk::gdn_prefill
