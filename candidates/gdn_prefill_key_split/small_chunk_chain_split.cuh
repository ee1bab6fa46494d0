// The small-chunk chain with each group of 16 value rows held by two warps, each holding the
// rows' state over half of the 128 key columns (eight m16n8 accumulator tiles instead of
// sixteen): the decoupled narrow CTA's chain (route_small_chunk_decoupled.cuh, SMALL_KEY_SPLIT).
//
// Why: decoupled from the producers, the chain warps' own step is what a chunk costs, and at one
// CTA per SM a chain warp is bound by its instruction issue and its dependent MMAs (Nsight Compute
// on one H200, ROOFLINE.md). Split by keys, each warp does half of D = M K^T, Dq = M Q^T and of the
// state update (their dependent MMA chains half as long), and the outputs of one of the two token
// tiles; the pair exchanges its partial D (both tiles) and the other warp's partial Dq tile through
// shared memory once per chunk (SmallKeyExchange, one barrier per pair and chunk parity) and both
// compute Delta, which needs all of D. The arithmetic is small_chain_chunk's (small_chunk_chain.cuh
// has the formulas), D summed in two halves.
#pragma once

#include "pipeline_barrier.cuh"
#include "small_chunk_chain.cuh"

namespace khk::gdn_prefill {

/// One chunk of `count` tokens for key half `half` (keys 64 * half ..) of the 16 rows from
/// warp_row0: the outputs of token tile `half` to `out` (as small_chain_chunk), and M advanced.
/// `x` is the pair's exchange; `xc` its cursor (the chunk's parity slot), advanced here.
/// wait_operands() (as small_chain_chunk's) after D, Dq and the exchange.
template <typename WaitOperands>
__device__ __forceinline__ void small_chain_chunk_split(float (&m)[8][4], const SmallTiles& tiles,
                                                        const SmallOperands& op, int warp_row0,
                                                        int half, SmallKeyExchange& x, int pair,
                                                        RingCursor<2>& xc, int count,
                                                        __nv_bfloat16* out, int lane,
                                                        WaitOperands wait_operands) {
  const int mi = lane / 8, r = lane % 8;
  const int key0 = 64 * half;

  // This half's D and Dq: hi and lo products in separate accumulators.
  float dk[2][2][4] = {}, dq[2][2][4] = {};  // [hi | lo][n-tile]
#pragma unroll
  for (int s = 0; s < 4; ++s) {
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
  float d[2][4], dq_sum[2][4], dq_own[4], dq_other[4];
  add_tiles(dk[0][0], dk[1][0], d[0]);
  add_tiles(dk[0][1], dk[1][1], d[1]);
  add_tiles(dq[0][0], dq[1][0], dq_sum[0]);
  add_tiles(dq[0][1], dq[1][1], dq_sum[1]);
#pragma unroll
  for (int e = 0; e < 4; ++e) {  // selects, not a run-time index (which would put dq on the stack)
    dq_own[e] = half ? dq_sum[1][e] : dq_sum[0][e];
    dq_other[e] = half ? dq_sum[0][e] : dq_sum[1][e];
  }

  // The exchange: publish this half's partials, take the other's. Both warps add the same two
  // partials (addition commutes), so they hold the same D bit for bit. The slot is written again
  // two chunks on, after this warp has waited for the other's arrival of the chunk between, which
  // follows the other's reads of it.
  float4(&mine)[3][32] = x.part[pair][xc.slot][half];
  const float4(&theirs)[3][32] = x.part[pair][xc.slot][1 - half];
  mine[0][lane] = make_float4(d[0][0], d[0][1], d[0][2], d[0][3]);
  mine[1][lane] = make_float4(d[1][0], d[1][1], d[1][2], d[1][3]);
  mine[2][lane] = make_float4(dq_other[0], dq_other[1], dq_other[2], dq_other[3]);
  ring_arrive(&x.full[pair][xc.slot]);
  ring_wait(&x.full[pair][xc.slot], xc.parity);
  __syncwarp();
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const float4 t = theirs[nt][lane];
    d[nt][0] += t.x, d[nt][1] += t.y, d[nt][2] += t.z, d[nt][3] += t.w;
  }
  {
    const float4 t = theirs[2][lane];
    dq_own[0] += t.x, dq_own[1] += t.y, dq_own[2] += t.z, dq_own[3] += t.w;
  }
  xc.advance();

  wait_operands();  // only now (small_chain_chunk says why)
  float delta[2][4];
  small_delta(tiles, op, d, warp_row0, delta, lane);  // both warps: it needs all of D
  uint32_t dhi[4], dlo[4];
  split_a_truncated(delta[0], delta[1], dhi, dlo);
  small_output_tile(dq_own, dhi, dlo, op, half, warp_row0, count, out, lane);
  small_update_rows(m, tiles, op, delta, key0, lane);
}

}  // namespace khk::gdn_prefill
