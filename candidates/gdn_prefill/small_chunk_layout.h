// The small-chunk route's sizes, warp roles and shared memory (route_small_chunk.cuh).
//
// The route walks each (sequence, value head, tile of value rows) in chunks of 16 tokens. Within
// a chunk the recurrence is the chunked form at C = 16 (ROOFLINE.md, "Small-chunk"): the
// key-only work of a chunk (gates, K K^T, Q K^T, the 16x16 inverse, the decay ratios) is tiny and
// runs on producer warps ahead of the chain, so the chain's warps do only the four state
// products per chunk, on tensor cores with the state rows as fp32 accumulators.
//
// The CTA's warps, and the pipeline they form (one CTA barrier per iteration; chunk c's inputs
// are requested in iteration c; route_small_chunk_decoupled.cuh runs the same four-producer roles
// in loops of their own, handing buffers on through shared-memory barriers):
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

#include <cstdint>

#include "gdn_prefill.cuh"
#include "sequence_order.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

constexpr int kSmallChunk = 16;  // tokens per chunk

// Iterations between a chunk's request and its phase A (two: the loads have one whole iteration
// and more to land), and between its request and its chain step.
constexpr int kSmallLoadLead = 2;
constexpr int kSmallChainLag = kSmallLoadLead + 2;
constexpr int kSmallTileStages = kSmallChainLag + 1;  // a chunk's tiles live from request to chain

/// The warp roles of a CTA with kRowWarps groups of 16 value rows (2 or 8, chosen per call by
/// the dispatch: tuning.h, SMALL_CHUNK_WIDE_ITEMS) and kProducers producer warps (2 or 4). Each
/// group is one chain warp, or with kKeyParts = 2 or 4 that many, each holding a part of the rows'
/// key columns (the decoupled narrow CTA only: route_small_chunk_decoupled.cuh, SMALL_KEY_PARTS).
template <int kRowWarps, int kProducers = 2, int kKeyParts = 1>
struct SmallRoles {
  static_assert(kRowWarps == 2 || kRowWarps == 4 || kRowWarps == 8, "2, 4 or 8 chain warps");
  static_assert(kProducers == 2 || kProducers == 4, "2 or 4 producer warps");
  static_assert(kKeyParts == 1 || ((kKeyParts == 2 || kKeyParts == 4) && kProducers == 4),
                "the key split (2 or 4 parts) needs the four producers' decoupled pipeline");
  static constexpr int kRows = 16 * kRowWarps;  // value rows per CTA
  static constexpr int kTilesPerHead = kHeadSize / kRows;
  static constexpr int kChainWarps = kRowWarps * kKeyParts;
  static constexpr int kLoadWarp = kChainWarps;
  static constexpr int kGateWarp = kProducers == 4 ? kChainWarps + 1 : kLoadWarp;
  static constexpr int kSolveWarp = kProducers == 4 ? kChainWarps + 2 : kChainWarps + 1;
  static constexpr int kScaleWarp = kProducers == 4 ? kChainWarps + 3 : kSolveWarp;
  // The key-split CTA may run each per-chunk producer role twice, the two warps taking the even
  // and the odd chunks (a chunk's phases A and B need nothing of the chunk before): a second gate
  // warp (SMALL_SPLIT_GATES) and a second solve and scale warp (SMALL_SPLIT_PHASE_B), after the
  // scale warp in that order. The load warp stays one: the tile ring is filled in chunk order.
  static constexpr int kGates = kKeyParts > 1 && kSmallSplitGates ? 2 : 1;
  static constexpr int kPhaseBLanes = kKeyParts > 1 && kSmallSplitPhaseB ? 2 : 1;
  static constexpr int kSecondGateWarp = kChainWarps + kProducers;  // when kGates == 2
  static constexpr int kSecondSolveWarp = kChainWarps + kProducers + kGates - 1;  // kPhaseBLanes 2
  static constexpr int kSecondScaleWarp = kSecondSolveWarp + 1;
  static constexpr int kThreads =
      32 * (kChainWarps + kProducers + (kGates - 1) + 2 * (kPhaseBLanes - 1));
  // The tile ring's slots the decoupled walk uses: all kSmallTileStages (5), or 4 with two gate
  // warps, so that each slot's chunks are all even or all odd and each gate warp waits on every
  // phase of its slots' `tiles_full` barriers. On an odd ring a gate warp would skip every other
  // phase of each slot, and a wait for parity p passes at once while the barrier is still a
  // phase behind: only the in-order completion of the load warp's copy arrivals, which PTX does
  // not state, would keep it from reading a tile still in flight.
  // The same holds for the scale warps where they wait for the tiles (SMALL_SCALE_QK) in two lanes.
  static constexpr int kTileSlots =
      kGates == 2 || (kPhaseBLanes == 2 && kSmallScaleQK) ? 4 : kSmallTileStages;
};

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

/// The barriers of the decoupled pipeline (route_small_chunk_decoupled.cuh: each ring buffer a
/// `full` barrier its producers arrive on and an `empty` one its consumers arrive on); unused by
/// the lockstep one.
struct SmallRing {
  uint64_t tiles_full[kSmallTileStages], tiles_empty[kSmallTileStages];
  uint64_t products_full[2], products_empty[2];
  uint64_t operands_full[2], operands_empty[2];
};

/// The key-split chain's exchange (small_chunk_chain_split.cuh), after SmallSmem in the narrow
/// key-split CTA's shared memory only (its 16-32 KB in every CTA would cost the CTAs that share
/// SMs). Per group of 16 rows (kKeyParts chain warps) and chunk parity, each warp's partial D and
/// Dq over its keys (both token tiles of each), as its lanes' fragments; `full` counts the group's
/// lanes.
template <int kKeyParts>
struct alignas(16) SmallKeyExchange {
  static constexpr int kGroups = 2;  // the narrow CTA's groups of rows
  // [group][chunk & 1][part][D tile 0, D tile 1, Dq tile 0, Dq tile 1][lane]
  float4 part[kGroups][2][kKeyParts][4][32];
  uint64_t full[kGroups][2];                  // [group][chunk & 1]
};

/// What the key-split CTA keeps after SmallSmem: the exchange, and the second solve warp's
/// scratch (SMALL_SPLIT_PHASE_B; the first uses SmallSmem's).
template <int kKeyParts>
struct alignas(16) SmallKeySplitSmem {
  SmallKeyExchange<kKeyParts> exchange;
  SmallSolveScratch odd_scratch;
};

struct SmallSmem {
  SmallTiles tiles[kSmallTileStages];
  SmallProducts products[2];
  SmallOperands operands[2];
  SmallRing ring;
  union {
    SmallSolveScratch scratch;
    // Before the walk, the ranking of the sequences (sequence_order.cuh); the solve role first
    // writes `scratch` in iteration kSmallLoadLead + 1, after every thread has passed the
    // iteration barriers since the ranking.
    int64_t order[kRankScratchInt64];
  };
};

/// Where the key-split CTA's SmallKeySplitSmem starts in its shared memory.
constexpr int kSmallKeySplitOffset = (static_cast<int>(sizeof(SmallSmem)) + 15) / 16 * 16;

}  // namespace khk::gdn_prefill
