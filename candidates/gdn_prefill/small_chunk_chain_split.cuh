// The small-chunk chain with each group of 16 value rows held by kParts warps (2 or 4), each
// holding the rows' state over 128 / kParts of the key columns (16 / kParts m16n8 accumulator
// tiles instead of sixteen): the decoupled narrow CTA's chain (route_small_chunk_decoupled.cuh,
// SMALL_KEY_PARTS).
//
// Why: decoupled from the producers, the chain warps' own step is what a chunk costs, and at one
// CTA per SM a chain warp is bound by its instruction issue and its dependent MMAs (Nsight Compute
// on one H200, ROOFLINE.md). Split by keys, each warp does its part of D = M K^T, Dq = M Q^T and of
// the state update (their dependent MMA chains shorter by the parts); parts 0 and 1 each do the
// outputs of one of the two token tiles. The group exchanges its partial D and Dq through shared
// memory once per chunk (SmallKeyExchange, one barrier per group and chunk parity) and every warp
// computes Delta, which needs all of D. The arithmetic is small_chain_chunk's
// (small_chunk_chain.cuh has the formulas), D and Dq summed over the parts.
#pragma once

#include "pipeline_barrier.cuh"
#include "small_chunk_chain.cuh"

namespace khk::gdn_prefill {

/// The sum over the group's kParts partials of entry `e` (D 0, D 1, Dq 0, Dq 1) of exchange slot
/// `at`, every part read back from shared memory (this warp's own too) and added pairwise in part
/// order: every warp of the group adds the same values in the same order, so all hold the same
/// sums bit for bit.
template <int kParts>
__device__ __forceinline__ void small_sum_parts(const float4 (&at)[kParts][4][32], int e,
                                                float (&sum)[4], int lane) {
  float v[kParts][4];
#pragma unroll
  for (int p = 0; p < kParts; ++p) {
    const float4 t = at[p][e][lane];
    v[p][0] = t.x, v[p][1] = t.y, v[p][2] = t.z, v[p][3] = t.w;
  }
#pragma unroll
  for (int w = 1; w < kParts; w *= 2)
#pragma unroll
    for (int p = 0; p + w < kParts; p += 2 * w) add_tiles(v[p], v[p + w], v[p]);
#pragma unroll
  for (int i = 0; i < 4; ++i) sum[i] = v[0][i];
}

/// One chunk of `count` tokens for key part `part` (keys 128 / kParts * part ..) of the 16 rows
/// from warp_row0: for parts 0 and 1 the outputs of token tile `part` to `out` (as
/// small_chain_chunk), and M advanced. The rows are held as they are, never scaled
/// (SMALL_SCALED_STATE): with half the keys a part saves 32 multiplies of its rows per chunk, and
/// measured on one H200 the scaled form lost 2 % on these narrow, latency-bound CTAs.
/// `x` is the exchange; `group` the rows' group in it; `xc` its cursor (the chunk's parity slot),
/// advanced here. wait_operands() (as small_chain_chunk's) after D, Dq and the exchange.
template <int kParts, typename WaitOperands>
__device__ __forceinline__ void small_chain_chunk_split(
    float (&m)[16 / kParts][4], const SmallTiles& tiles, const SmallOperands& op, int warp_row0,
    int part, SmallKeyExchange<kParts>& x, int group, RingCursor<2>& xc, int count,
    __nv_bfloat16* out, int lane, WaitOperands wait_operands) {
  static_assert(kParts == 2 || kParts == 4, "2 or 4 key parts");
  constexpr int kKeys = kHeadSize / kParts;
  const int mi = lane / 8, r = lane % 8;
  const int key0 = kKeys * part;

  // This part's D and Dq: hi and lo products in separate accumulators.
  float dk[2][2][4] = {}, dq[2][2][4] = {};  // [hi | lo][n-tile]
#pragma unroll
  for (int s = 0; s < kKeys / 16; ++s) {
    uint32_t hi[4], lo[4], kb[4], qb[4];
    split_a_truncated(m[2 * s], m[2 * s + 1], hi, lo);
    ldmatrix_x4(kb, &tiles.k[(mi / 2) * 8 + r][key0 + 16 * s + (mi % 2) * 8]);
    ldmatrix_x4(qb, &tiles.q[(mi / 2) * 8 + r][key0 + 16 * s + (mi % 2) * 8]);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      mma_bf16(dk[0][nt], hi, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dk[1][nt], lo, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dq[0][nt], hi, qb[2 * nt], qb[2 * nt + 1]);
      mma_bf16(dq[1][nt], lo, qb[2 * nt], qb[2 * nt + 1]);
    }
  }

  // The exchange: publish this part's partials, then sum every part's. A slot is written again
  // two chunks on, after this warp has waited for every warp's arrival of the chunk between,
  // which follows each warp's reads of it.
  float4(&slot)[kParts][4][32] = x.part[group][xc.slot];
  float partial[4][4];  // D 0, D 1, Dq 0, Dq 1
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    add_tiles(dk[0][nt], dk[1][nt], partial[nt]);
    add_tiles(dq[0][nt], dq[1][nt], partial[2 + nt]);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e)
    slot[part][e][lane] = make_float4(partial[e][0], partial[e][1], partial[e][2], partial[e][3]);
  ring_arrive(&x.full[group][xc.slot]);
  ring_wait(&x.full[group][xc.slot], xc.parity);
  __syncwarp();
  float d[2][4], dq_own[4] = {};
  small_sum_parts(slot, 0, d[0], lane);
  small_sum_parts(slot, 1, d[1], lane);
  const bool outputs = part < 2;  // parts 0 and 1: token tile `part`
  if (outputs) small_sum_parts(slot, 2 + part, dq_own, lane);
  xc.advance();

  wait_operands();  // only now (small_chain_chunk says why)
  float delta[2][4];
  small_delta<false>(tiles, op, d, warp_row0, delta, lane);  // every part: it needs all of D
  if (outputs) {
    uint32_t dhi[4], dlo[4];
    split_a_truncated(delta[0], delta[1], dhi, dlo);
    small_output_tile<__nv_bfloat16, false>(dq_own, dhi, dlo, op, part, warp_row0, count, out,
                                            lane);
  }
  float unscaled = 1.0f;
  small_update_rows<16 / kParts, false>(m, tiles, op, delta, key0, lane, unscaled);
}

}  // namespace khk::gdn_prefill
