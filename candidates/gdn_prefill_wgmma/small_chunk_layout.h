// The small-chunk route's sizes, warp roles and shared memory (route_small_chunk.cuh).
//
// The route walks each (sequence, value head, tile of value rows) in chunks of 16 tokens. Within
// a chunk the recurrence is the chunked form at C = 16 (ROOFLINE.md, "Small-chunk"): the
// key-only work of a chunk (gates, K K^T, Q K^T, the 16x16 inverse, the decay ratios) is tiny and
// runs on producer warps ahead of the chain, so the chain's warps do only the four state
// products per chunk, on tensor cores with the state rows as fp32 accumulators.
//
// The CTA's warps, and the pipeline they form (one CTA barrier per iteration; chunk c's inputs
// are requested in iteration c):
//   - warps 0 .. kRowWarps - 1, the chain: 16 value rows each; chunk c in iteration c + 4;
//   - the producers, four warps or two (SmallRoles::kProducers, chosen per call by the dispatch:
//     tuning.h, SMALL_FOUR_PRODUCER_CTAS):
//       kLoadWarp: the cp.async requests of chunk `it` in iteration `it`;
//       kGateWarp: phase A of chunk c in iteration c + 2: the gates and their cumulative log2
//         decay, K K^T and Q K^T, and A from K K^T;
//       kSolveWarp: phase B of chunk c in iteration c + 3, the inverse of I + A and X''s
//         fragments; kScaleWarp, in the same iteration, scale P''s fragments and the per-token
//         scalings.
//     With two producers the load and gate roles share one warp, the solve and scale roles the
//     other. Four take each role's work off the others' iteration (Nsight Compute on one H200:
//     with two, the inverse's warp was the longest role); two hold fewer registers per CTA where
//     narrow CTAs share SMs.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "gdn_prefill.cuh"
#include "sequence_order.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

constexpr int kSmallChunk = 16;  // tokens per chunk

/// The warp roles of a CTA with kRowWarps chain warps (2 or 8, chosen per call by the dispatch:
/// tuning.h, SMALL_CHUNK_WIDE_ITEMS) and kProducers producer warps (2 or 4).
template <int kRowWarps, int kProducers = 2>
struct SmallRoles {
  static_assert(kRowWarps == 2 || kRowWarps == 4 || kRowWarps == 8, "2, 4 or 8 chain warps");
  static_assert(kProducers == 2 || kProducers == 4, "2 or 4 producer warps");
  static constexpr int kRows = 16 * kRowWarps;  // value rows per CTA
  static constexpr int kTilesPerHead = kHeadSize / kRows;
  static constexpr int kLoadWarp = kRowWarps;
  static constexpr int kGateWarp = kProducers == 4 ? kRowWarps + 1 : kLoadWarp;
  static constexpr int kSolveWarp = kProducers == 4 ? kRowWarps + 2 : kRowWarps + 1;
  static constexpr int kScaleWarp = kProducers == 4 ? kRowWarps + 3 : kSolveWarp;
  static constexpr int kThreads = 32 * (kRowWarps + kProducers);
};

// Iterations between a chunk's request and its phase A (two: the loads have one whole iteration
// and more to land), and between its request and its chain step.
constexpr int kSmallLoadLead = 2;
constexpr int kSmallChainLag = kSmallLoadLead + 2;
constexpr int kSmallTileStages = kSmallChainLag + 1;  // a chunk's tiles live from request to chain

// Row strides in bf16 (272 B): the eight row addresses of an ldmatrix fall in distinct bank
// groups. The V tile is sized for the widest CTA (128 rows), whatever the CTA's width.
constexpr int kSmallKStride = kHeadSize + 8;

/// A chunk's inputs as they arrive (cp.async; tokens past the chunk's end are zeros).
struct SmallTiles {
  __nv_bfloat16 k[kSmallChunk][kSmallKStride];
  __nv_bfloat16 q[kSmallChunk][kSmallKStride];
  __nv_bfloat16 v[kSmallChunk][kSmallKStride];  // the CTA's value rows (from the first)
  uint32_t a[kSmallChunk], b[kSmallChunk];      // the aligned bf16 pair holding head h's a, b
};

// The wide CTAs' second copy of a chunk's K and Q, for the chain's warpgroup MMAs
// (small_chunk_chain_wgmma.cuh), in the 128-byte swizzle: line l (K's token l, or Q's token
// l - 16) holds 64 keys per column block (two blocks, keys 0-63 and 64-127), and its 16-byte
// chunks of 8 keys lie in the order chunk ^ (l % 8). One layout serves as the K-major B operand of
// M [K; Q]^T (N = the 32 lines) and as the N-major B operand of the state update (N = K's 128
// keys, K = its 16 lines). The producers and the narrow CTAs keep reading SmallTiles' rows.
constexpr int kSmallKqLines = 2 * kSmallChunk;
constexpr int kSmallKqLineValues = 64;
constexpr uint32_t kSmallKqLineBytes = 128;
constexpr uint32_t kSmallKqBlockBytes = kSmallKqLines * kSmallKqLineBytes;  // 4 KB
constexpr uint32_t kSmallSwizzleBytes = 8 * kSmallKqLineBytes;  // the swizzle's period: 8 lines
constexpr int kSmallQLine = kSmallChunk;  // Q's token t is line kSmallQLine + t

/// 1024-byte aligned: the swizzle is a function of the address.
struct alignas(1024) SmallKqTile {
  __nv_bfloat16 kq[kHeadSize / kSmallKqLineValues][kSmallKqLines][kSmallKqLineValues];
};

/// The 16-byte chunk of keys key .. key + 7 (key a multiple of 8) of line `line`.
__device__ __forceinline__ __nv_bfloat16* kq_chunk(SmallKqTile& t, int line, int key) {
  return &t.kq[key / kSmallKqLineValues][line][((key % kSmallKqLineValues / 8) ^ (line % 8)) * 8];
}

/// Phase A's results, phase B's inputs.
struct SmallProducts {
  float a[kSmallChunk][kSmallChunk + 1];   // A: beta_t 2^(lg_t - lg_i) k_t . k_i for i < t, else 0
  float qk[kSmallChunk][kSmallChunk + 1];  // q_t . k_i
  float log2_decay[kSmallChunk];           // cumulative log2 decay through token t (0 past the end)
  float beta[kSmallChunk];                 // 0 past the end
};

/// Phase B's results, the chain's operands: B fragments per n-tile (8 tokens) and lane, each
/// {hi b0, hi b1, lo b0, lo b1}, and the per-token scalings.
struct SmallOperands {
  uint4 x[2][32];              // X' = (I + A)^-1 diag(beta), as X'^T
  uint4 p[2][32];              // scale * P', as P'^T
  float gamma[kSmallChunk];    // 2^lg_t: the decay from the chunk's start through token t
  float sgamma[kSmallChunk];   // scale * gamma
  float w[kSmallChunk];        // 2^(lg_last - lg_t)
  float gamma_last;
};

/// The solve role's X' (fp32, padded rows).
struct SmallSolveScratch {
  float x[kSmallChunk][kSmallChunk + 1];
};

struct SmallSmem {
  SmallTiles tiles[kSmallTileStages];
  SmallProducts products[2];
  SmallOperands operands[2];
  union {
    SmallSolveScratch scratch;
    // Before the walk, the ranking of the sequences (sequence_order.cuh); the solve role first
    // writes `scratch` in iteration kSmallLoadLead + 1, after every thread has passed the
    // iteration barriers since the ranking.
    int64_t order[kRankScratchInt64];
  };
  // Last, so that CTAs without the warpgroup-MMA chain launch without it (small_smem_bytes).
  SmallKqTile kq[kSmallTileStages];
};

/// Whether a CTA of kRowWarps chain warps runs its chain with warpgroup MMAs: its chain warps form
/// whole warpgroups and SMALL_WGMMA_CHAIN asks for it (tuning.h).
template <int kRowWarps>
constexpr bool kSmallWgmmaChainOf = kRowWarps % 4 == 0 && kSmallWgmmaChain > 0;

/// What of SmallKqTile such a CTA's chain reads: 0 nothing, 1 K (the update), 2 K and Q (also
/// D and Dq).
template <int kRowWarps>
constexpr int kSmallKqLinesOf = kSmallWgmmaChainOf<kRowWarps> ? kSmallWgmmaChain : 0;

/// The dynamic shared memory of a small-chunk CTA of kRowWarps chain warps (SmallSmem, less the
/// K and Q copies where the chain does not read them).
template <int kRowWarps>
constexpr size_t small_smem_bytes() {
  return kSmallWgmmaChainOf<kRowWarps> ? sizeof(SmallSmem) : offsetof(SmallSmem, kq);
}

}  // namespace khk::gdn_prefill
