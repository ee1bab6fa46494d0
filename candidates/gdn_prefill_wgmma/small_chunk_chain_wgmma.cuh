// The small-chunk chain step (small_chunk_chain.cuh) with warpgroup MMAs, for CTAs whose chain
// warps form whole warpgroups (4 or 8 chain warps: the wide CTAs). The state rows of a
// warpgroup's four warps are the fp32 accumulator of an m64n128 MMA as they are (each warp's
// m[16][4] is its 16 rows of it), so the two products with the most work per chunk move to wgmma
// with the same operands and splits (SMALL_WGMMA_CHAIN, tuning.h, says which):
//   M = gamma_last M + (Delta diag(w)) K   m64n128k16 x (W hi, W lo): 2 instructions per
//                         warpgroup instead of 32 mma.sync per warp; B = K read N-major from the
//                         chunk's swizzled K and Q copy (small_chunk_layout.h, SmallKqTile);
//   [D Dq] = M [K; Q]^T   m64n32k16 x 8 key steps x (M hi, M lo): 16 instead of 64 per warp;
//                         B = the same copy read K-major. Each step's A fragments are split from
//                         the state registers just before, so ptxas waits for the step before
//                         (it reports the injected waits): fewer instructions, but a chain.
// Delta and the outputs (16 mma.sync per warp) stay as they are (small_chain_delta). Every warp of
// a warpgroup calls this for the same chunk (the instructions are warpgroup-collective). The sums
// are those of the mma.sync step, in the same order (each instruction adds its k16 products to
// its accumulator), so a wide CTA's rows match a narrow one's on the host emulation bit for bit.
#pragma once

#include "small_chunk_chain.cuh"
#include "warpgroup_mma.cuh"

namespace khk::gdn_prefill {

/// D = M K^T and Dq = M Q^T (always both: one N = 32 operand) for the warpgroup's 64 rows. The hi
/// and lo products accumulate apart and are added at the end, as small_chain_products does, so
/// that both forms compute the same sums.
__device__ __forceinline__ void small_chain_products_wgmma(const float (&m)[16][4],
                                                           const SmallKqTile& kq, float (&d)[2][4],
                                                           float (&dq)[2][4]) {
  // m64n32: columns 0-15 the keys' tokens (D), 16-31 the queries' (Dq).
  float hi_sum[kSmallChunk], lo_sum[kSmallChunk];
  wgmma_fence();
#pragma unroll
  for (int s = 0; s < kHeadSize / 16; ++s) {
    uint32_t hi[4], lo[4];
    split_a_truncated(m[2 * s], m[2 * s + 1], hi, lo);
    const uint64_t b = kq_keys_descriptor(kq, s);
    wgmma_m64n32k16(hi_sum, hi, b, s > 0);
    wgmma_m64n32k16(lo_sum, lo, b, s > 0);
  }
  wgmma_commit();
  wgmma_wait_all();
  pin_accumulators(hi_sum);
  pin_accumulators(lo_sum);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      d[nt][e] = hi_sum[4 * nt + e] + lo_sum[4 * nt + e];
      dq[nt][e] = hi_sum[8 + 4 * nt + e] + lo_sum[8 + 4 * nt + e];
    }
}

/// M = gamma_last M + (Delta diag(w)) K for the warpgroup's 64 rows.
__device__ __forceinline__ void small_chain_update_wgmma(float (&m)[16][4], const SmallKqTile& kq,
                                                         const float (&delta)[2][4],
                                                         const SmallOperands& op, int lane) {
  uint32_t whi[4], wlo[4];
  small_chain_update_operand(delta, op, whi, wlo, lane);
  const float decay = op.gamma_last;
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) m[j][e] *= decay;
  wgmma_fence();
  const uint64_t k = k_tokens_descriptor(kq);
  wgmma_m64n128k16_update(m, whi, k);
  wgmma_m64n128k16_update(m, wlo, k);
  wgmma_commit();
  wgmma_wait_all();
  pin_accumulators(m);
}

/// The chain step of a CTA of kRowWarps chain warps: where kSmallWgmmaChainOf says so, the state
/// update (and with SMALL_WGMMA_CHAIN = 2 also D and Dq) on warpgroup MMAs reading K and Q from
/// `kq`; the rest on mma.sync reading `tiles`.
template <int kRowWarps, bool kOutput = true, typename Out = __nv_bfloat16>
__device__ __forceinline__ void small_chain_step(float (&m)[16][4], const SmallTiles& tiles,
                                                 const SmallKqTile& kq, const SmallOperands& op,
                                                 int warp_row0, int count, Out* out, int lane) {
  if constexpr (!kSmallWgmmaChainOf<kRowWarps>) {
    small_chain_chunk<kOutput>(m, tiles, op, warp_row0, count, out, lane);
  } else {
    float d[2][4], dq[2][4], delta[2][4];
    if constexpr (kSmallWgmmaChain == 2)
      small_chain_products_wgmma(m, kq, d, dq);
    else
      small_chain_products<kOutput>(m, tiles, d, dq, lane);
    small_chain_delta<kOutput>(d, dq, tiles, op, warp_row0, count, out, lane, delta);
    small_chain_update_wgmma(m, kq, delta, op, lane);
  }
}

}  // namespace khk::gdn_prefill
