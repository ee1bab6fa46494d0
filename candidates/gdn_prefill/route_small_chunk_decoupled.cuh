// The small-chunk route's plain CTAs with their warp roles decoupled: the same roles and the same
// arithmetic per chunk as small_chunk_kernel (small_chunk_layout.h, small_chunk_producer.cuh,
// small_chunk_chain.cuh), but each role walks the sequence's chunks at its own pace, handing its
// buffers on through shared-memory barriers (pipeline_barrier.cuh), instead of all roles meeting
// at one CTA barrier per iteration.
//
// Why: with one barrier per iteration an iteration lasts as long as its slowest role that
// iteration, plus the barrier. Nsight Compute on one H200 (134 x 1, 8192 x 20, 5709 x 2) had the
// chain warps -- the busiest role -- a quarter of their time at that barrier, waiting for a
// producer that happened to be late that iteration; shortening any one role (the key split, a
// deeper load lead, the gates moved to the load warp) did not shorten the iteration
// (ROOFLINE.md, "Tried on top of c69aca7a9255"). Here a producer that is late for one chunk
// catches up while the chain works on the ones it already has: the chain waits only when the
// producers as a whole fall behind, and the producers run ahead by as many chunks as their rings
// hold (kSmallTileStages tiles, two products and two operand sets).
//
// The rings (each buffer a `full` barrier its producers arrive on, an `empty` one its consumers
// arrive on; every lane of a warp arrives, so a warp's writes are released by its own lanes):
//   tiles[kSmallTileStages]  load warp (its cp.async copies landing) -> gate warp and chain warps
//                            (both free it, so the gate's reads come before the refill directly,
//                            not only through the chain's wait on the operands); with
//                            SMALL_SCALE_QK the scale warp reads it too, and its reads come
//                            before the chain's arrival through the operands it writes after
//                            them, so it does not arrive
//   products[2]              gate warp -> solve and scale warps
//   operands[2]              solve and scale warps -> chain warps
// Four producer warps only: with two, one warp holds two roles and would have to interleave its
// waits. The walk serves the plain route's CTAs (small_chunk_decoupled_kernel) and the
// context-parallel map pass's (route_small_chunk_cp.cuh); the persistent CTAs, which walk a stream
// of items, have their own loops on the same rings (route_small_chunk_persistent.cuh).
#pragma once

#include <type_traits>

#include "pipeline_barrier.cuh"
#include "route_small_chunk.cuh"
#include "small_chunk_chain_split.cuh"
#include "trace.cuh"

namespace khk::gdn_prefill {

/// Starts the rings (and, for a map's walk, zeroes the V tiles once: its values are zero and it
/// requests none; with the key split, the groups' exchange barriers in `x`), then the CTA barrier
/// that publishes them. Every thread of the CTA.
/// kMetaArrival: the load warp's lane 0 also arrives plainly on a tile's `full` barrier, releasing
/// what it wrote beside the tile (the persistent CTAs' chunk metadata).
template <int kRowWarps, bool kIdentity, bool kMetaArrival = false, int kKeyParts = 1>
__device__ __forceinline__ void small_ring_start(SmallSmem& s,
                                                 SmallKeySplitSmem<kKeyParts>* x = nullptr) {
  constexpr int kChainWarps = SmallRoles<kRowWarps, 4, kKeyParts>::kChainWarps;
  if constexpr (kIdentity) small_zero_value_tiles<SmallRoles<kRowWarps, 4>::kThreads>(s);
  if (threadIdx.x == 0) {
    SmallRing& ring = s.ring;
    for (int i = 0; i < kSmallTileStages; ++i) {
      ring_init(&ring.tiles_full[i], 32 + kMetaArrival);  // the load warp's lanes (and lane 0)
      ring_init(&ring.tiles_empty[i], 32 * (kChainWarps + 1));  // the chain and gate warps' lanes
    }
    for (int i = 0; i < 2; ++i) {
      // One gate warp, one solve and one scale warp per chunk, however many take turns.
      ring_init(&ring.products_full[i], 32);            // the gate warp's lanes
      ring_init(&ring.products_empty[i], 64);           // the solve and scale warps' lanes
      ring_init(&ring.operands_full[i], 64);            // the solve and scale warps' lanes
      ring_init(&ring.operands_empty[i], 32 * kChainWarps);
    }
    if constexpr (kKeyParts > 1)
      for (int g = 0; g < SmallKeyExchange<kKeyParts>::kGroups; ++g)
        for (int i = 0; i < 2; ++i)
          ring_init(&x->exchange.full[g][i], 32 * kKeyParts);  // every warp of the group
    ring_init_fence();
  }
  __syncthreads();  // the barriers (and the ranking's reads of s.order, which `scratch` reuses)
}

/// The solve warp's or the scale warp's loop over chunks first, first + kLanes, ... of `chunks`:
/// phase B of each, from the products ring into the operands ring. With two lanes of phase B
/// (kLanes = 2) each warp takes every other chunk, so uses one slot of each ring; two solve warps
/// each have their own `scratch`. With SMALL_SCALE_QK the scale warp first computes the chunk's
/// Q K^T from its tile (ring of kTileSlots), while the gate warp works on the same tile; it does
/// not free the tile: the chain warps free it after the operands it writes after its reads.
template <int kLanes = 1, int kTileSlots = kSmallTileStages>
__device__ __forceinline__ void small_solve_or_scale(const PrefillArgs& args, SmallSmem& s,
                                                     SmallSolveScratch& scratch, int64_t chunks,
                                                     bool solve, int first, int lane) {
  static_assert(kLanes == 1 || !kSmallScaleQK || kTileSlots % kLanes == 0,
                "a slot's chunks to one scale warp");
  SmallRing& ring = s.ring;
  RingCursor<2> prod, op;
  RingCursor<kTileSlots> tile;
  prod.advance(first), op.advance(first), tile.advance(first);
  for (int64_t c = first; c < chunks; c += kLanes) {
    float qk[2][4];
    if (kSmallScaleQK && !solve) {
      ring_wait(&ring.tiles_full[tile.slot], tile.parity);
      __syncwarp();
      small_query_keys(s.tiles[tile.slot], qk, lane);
      tile.advance(kLanes);
    }
    ring_wait(&ring.products_full[prod.slot], prod.parity);
    ring_wait(&ring.operands_empty[op.slot], op.parity ^ 1);
    __syncwarp();
    if (solve) small_solve(s.products[prod.slot], scratch, s.operands[op.slot], lane);
    else if constexpr (kSmallScaleQK)
      small_scale(s.products[prod.slot], qk, s.operands[op.slot], args.scale, lane);
    else small_scale(s.products[prod.slot], s.operands[op.slot], args.scale, lane);
    if (c == 0 && solve) trace(kTraceFirstOperands);
    ring_arrive(&ring.products_empty[prod.slot]);
    ring_arrive(&ring.operands_full[op.slot]);
    prod.advance(kLanes), op.advance(kLanes);
  }
}

/// The decoupled chain's loop over `chunks` chunks: for each, the wait for its tile, then
/// step(ci, tile slot, operands slot, wait_operands) -- the step calls wait_operands() itself,
/// after D and Dq (small_chain_chunk) -- and the arrivals that free both buffers. Chain warp 0
/// leaves the timeline's marks (trace.cuh).
template <int kTileSlots = kSmallTileStages, class Step>
__device__ __forceinline__ void small_chain_loop(SmallSmem& s, int64_t chunks, int warp,
                                                 Step&& step) {
  SmallRing& ring = s.ring;
  RingCursor<kTileSlots> tile;
  RingCursor<2> op;
  for (int64_t ci = 0; ci < chunks; ++ci) {
    ring_wait(&ring.tiles_full[tile.slot], tile.parity);
    __syncwarp();
    step(ci, tile.slot, op.slot, [&] {
      ring_wait(&ring.operands_full[op.slot], op.parity);
      __syncwarp();
    });
    ring_arrive(&ring.tiles_empty[tile.slot]);
    ring_arrive(&ring.operands_empty[op.slot]);
    tile.advance();
    op.advance();
    if (warp == 0 && ci == 0) trace(kTraceFirstChain);
    if (warp == 0 && ci == chunks - 1) trace(kTraceLastChain);
  }
}

/// The decoupled chain warp `warp` of a walk (small_chunk_walk_decoupled): its 16 rows through
/// the walk's `chunks` chunks.
template <bool kOutput, bool kIdentity, typename Out>
__device__ __forceinline__ void small_chain_walk(const SmallWalk& walk, SmallSmem& s,
                                                 int64_t chunks, int warp, int lane) {
  const int row0 = walk.row0;
  float m[16][4], scale = 1.0f;  // the rows, held as m * scale (small_update_rows)
  const int64_t rows_at = (row0 + 16 * warp) * kHeadSize;
  if constexpr (kIdentity) small_identity_rows(m, row0 + 16 * warp, lane);
  else small_load_rows(m, walk.entry ? walk.entry + rows_at : nullptr, lane);
  Out* output = nullptr;
  if constexpr (std::is_same_v<Out, float>) output = walk.partial;
  else output = walk.output;
  small_chain_loop(s, chunks, warp, [&](int64_t ci, int tile, int op, auto wait_operands) {
    small_chain_chunk<kOutput>(
        m, scale, s.tiles[tile], s.operands[op], 16 * warp, small_chunk_tokens(walk.length, ci),
        kOutput ? output + ci * kSmallChunk * kVHeads * kHeadSize + row0 : nullptr, lane,
        wait_operands);
  });
  small_store_exit<kIdentity>(m, scale, walk, row0 + 16 * warp, lane);
  if (warp == 0) trace(kTraceStored);
}

/// The same for a key-split chain warp: rows of group warp / kParts, keys of part warp % kParts
/// (small_chunk_chain_split.cuh), its group exchanging through `x`; the tile ring of kTileSlots.
template <int kParts, int kTileSlots>
__device__ __forceinline__ void small_chain_walk_split(const SmallWalk& walk, SmallSmem& s,
                                                       SmallKeyExchange<kParts>& x,
                                                       int64_t chunks, int warp, int lane) {
  const int row0 = walk.row0, group = warp / kParts, part = warp % kParts;
  float m[16 / kParts][4];
  const int64_t rows_at = (row0 + 16 * group) * kHeadSize + kHeadSize / kParts * part;
  small_load_rows(m, walk.entry ? walk.entry + rows_at : nullptr, lane);
  RingCursor<2> xc;
  small_chain_loop<kTileSlots>(s, chunks, warp, [&](int64_t ci, int tile, int op,
                                                   auto wait_operands) {
    small_chain_chunk_split<kParts>(m, s.tiles[tile], s.operands[op], 16 * group, part, x, group,
                                    xc, small_chunk_tokens(walk.length, ci),
                                    walk.output + ci * kSmallChunk * kVHeads * kHeadSize + row0,
                                    lane, wait_operands);
  });
  if (walk.exit) small_store_rows(m, walk.exit + rows_at, lane);
  if (warp == 0) trace(kTraceStored);
}

/// A gate warp's loop (phase A) over chunks first, first + kGates, ... of a walk's `chunks`: from
/// the tile ring into products slot c & 1. With two gate warps each takes every other chunk, so
/// each uses one products slot and, on a ring of kTileSlots (SmallRoles::kTileSlots), the slots
/// of its chunks' parity.
template <int kGates, int kTileSlots>
__device__ __forceinline__ void small_gate_walk(const PrefillArgs& args, const SmallWalk& walk,
                                                SmallSmem& s, int64_t chunks, int first,
                                                int lane) {
  SmallRing& ring = s.ring;
  const int h = walk.h;
  const float A_log = args.A_log[h], dt_bias = args.dt_bias[h];
  static_assert(kGates == 1 || kTileSlots % kGates == 0, "a slot's chunks to one gate warp");
  RingCursor<kTileSlots> tile;
  RingCursor<2> prod;
  tile.advance(first), prod.advance(first);
  for (int64_t c = first; c < chunks; c += kGates) {
    ring_wait(&ring.tiles_full[tile.slot], tile.parity);
    if (c == 0) trace(kTraceFirstTile);
    ring_wait(&ring.products_empty[prod.slot], prod.parity ^ 1);
    __syncwarp();
    small_gate_products<!kSmallScaleQK>(s.tiles[tile.slot], s.products[prod.slot],
                                        small_chunk_tokens(walk.length, c), h, A_log, dt_bias,
                                        lane);
    if (c == 0) trace(kTraceFirstProducts);
    ring_arrive(&ring.products_full[prod.slot]);
    ring_arrive(&ring.tiles_empty[tile.slot]);  // its reads of the tile, on their own
    tile.advance(kGates), prod.advance(kGates);
  }
}

/// The decoupled walk of one CTA of kRowWarps groups of 16 value rows and four producer warps,
/// after small_ring_start; kOutput, kIdentity and Out as for small_chunk_walk
/// (route_small_chunk.cuh). kKeyParts = 2 or 4: that many chain warps per group, each over a part
/// of the keys (small_chunk_chain_split.cuh; plain outputs only), exchanging through `x`, and the
/// gate and phase B roles in one or two warps each (SmallRoles). `guessed`: the load warp has
/// already requested tile slot 0 as a full chunk from token 0 (small_start_early), which
/// the walk keeps if its sequence starts there with a full chunk, else lets land and requests
/// again.
template <int kRowWarps, bool kOutput = true, bool kIdentity = false,
          typename Out = __nv_bfloat16, int kKeyParts = 1>
__device__ __forceinline__ void small_chunk_walk_decoupled(
    const PrefillArgs& args, const SmallWalk& walk, SmallSmem& s,
    SmallKeySplitSmem<kKeyParts>* x = nullptr, bool guessed = false) {
  using Roles = SmallRoles<kRowWarps, 4, kKeyParts>;
  static_assert(kKeyParts == 1 ||
                    (kOutput && !kIdentity && std::is_same_v<Out, __nv_bfloat16> &&
                     kRowWarps == SmallKeyExchange<kKeyParts>::kGroups),
                "the key split runs the plain route's narrow CTAs");
  constexpr int kRows = Roles::kRows;
  SmallRing& ring = s.ring;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int h = walk.h, row0 = walk.row0;
  const int64_t length = walk.length;
  const int64_t chunks = (length + kSmallChunk - 1) / kSmallChunk;

  if (warp < Roles::kChainWarps) {
    if constexpr (kKeyParts > 1)
      small_chain_walk_split<kKeyParts, Roles::kTileSlots>(walk, s, x->exchange, chunks, warp,
                                                           lane);
    else small_chain_walk<kOutput, kIdentity, Out>(walk, s, chunks, warp, lane);
  } else if (warp == Roles::kLoadWarp) {
    // The guess is kept where it is exactly the first request; else it lands before the
    // request that overwrites it.
    const bool kept = guessed && walk.begin == 0 && length >= kSmallChunk;
    if (guessed && !kept) {
      copy_commit();
      copy_wait<0>();
    }
    RingCursor<Roles::kTileSlots> tile;
    for (int64_t c = 0; c < chunks; ++c) {
      ring_wait(&ring.tiles_empty[tile.slot], tile.parity ^ 1);
      if (c > 0 || !kept)
        small_request<kRows>(args, s.tiles[tile.slot], walk.begin + c * kSmallChunk,
                             small_chunk_tokens(length, c), h, row0, !kIdentity, lane);
      ring_arrive_on_copies(&ring.tiles_full[tile.slot]);  // (the kept guess's copies too)
      tile.advance();
    }
    copy_commit();
    copy_wait<0>();  // no copy outlives the warp
  } else if (warp == Roles::kGateWarp) {
    small_gate_walk<Roles::kGates, Roles::kTileSlots>(args, walk, s, chunks, 0, lane);
  } else if (Roles::kGates == 2 && warp == Roles::kSecondGateWarp) {
    small_gate_walk<Roles::kGates, Roles::kTileSlots>(args, walk, s, chunks, 1, lane);
  } else if (warp == Roles::kSolveWarp || warp == Roles::kScaleWarp) {
    small_solve_or_scale<Roles::kPhaseBLanes, Roles::kTileSlots>(
        args, s, s.scratch, chunks, warp == Roles::kSolveWarp, 0, lane);
  } else if constexpr (kKeyParts > 1) {  // the second solve or scale warp (kPhaseBLanes == 2)
    small_solve_or_scale<Roles::kPhaseBLanes, Roles::kTileSlots>(
        args, s, x->odd_scratch, chunks, warp == Roles::kSecondSolveWarp, 1, lane);
  }
}

/// Asks the L2 for the line holding `p`: no register written, nothing to wait for.
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if defined(__CUDACC__)
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
#else
  (void)p;
#endif
}

/// What a plain-route CTA in index order can start before it reads cu_seqlens (SMALL_EARLY_START;
/// `head` = sequence * 8 + h and `row0` come from the CTA's index): every CTA asks the L2 for its
/// state rows and its head's gate parameters, which the chain and gate warps read after the
/// rings start; the CTAs of sequence 0 request their first tile, guessed as tokens 0-15 of their
/// head and rows (the load warp), the copies landing while every thread reads cu_seqlens and
/// starts the rings. Sequence 0 starts at token 0 unless the call leaves tokens before it, and
/// where its first chunk is full the guess is the very tile its request would copy, so the walk
/// keeps it (small_chunk_walk_decoupled). A small call's first chunk then waits for one DRAM
/// round trip (the tile's) instead of two (cu_seqlens, then the tile). Returns whether it guessed.
template <int kRows, int kThreads>
__device__ __forceinline__ bool small_start_early(const PrefillArgs& args, SmallSmem& s,
                                                  int64_t head, int row0, bool load_warp,
                                                  int lane) {
  if (!kSmallEarlyStart) return false;
  const int h = static_cast<int>(head % kVHeads);
  if (args.state) {
    constexpr int kLines = kRows * kHeadSize * 4 / 128;  // the CTA's rows are contiguous
    const float* rows = args.state + head * kStateFloats + int64_t{row0} * kHeadSize;
    for (int i = static_cast<int>(threadIdx.x); i < kLines; i += kThreads)
      prefetch_l2(rows + 32 * i);
  }
  if (threadIdx.x == 0) prefetch_l2(args.A_log + h), prefetch_l2(args.dt_bias + h);
  if (head >= kVHeads || args.total_tokens < kSmallChunk) return false;
  if (load_warp) small_request<kRows>(args, s.tiles[0], 0, kSmallChunk, h, row0, true, lane);
  return true;
}

/// One CTA per (sequence, head, row tile), kRowWarps groups of 16 value rows and four producer
/// warps, each role in its own loop over the chunks. kLongestFirst as for small_chunk_kernel.
/// kKeyParts = 2 or 4 (narrow CTAs): that many chain warps per group, their exchange in the
/// shared memory after SmallSmem (kSmallKeySplitOffset).
template <int kRowWarps, bool kLongestFirst = false, int kKeyParts = 1>
__global__ void __launch_bounds__(SmallRoles<kRowWarps, 4, kKeyParts>::kThreads)
    small_chunk_decoupled_kernel(PrefillArgs args) {
  extern __shared__ __align__(16) unsigned char smem[];
  if (threadIdx.x == 0) trace(kTraceEntry);
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  SmallKeySplitSmem<kKeyParts>* x = nullptr;
  if constexpr (kKeyParts > 1)
    x = reinterpret_cast<SmallKeySplitSmem<kKeyParts>*>(smem + kSmallKeySplitOffset);
  using Roles = SmallRoles<kRowWarps, 4, kKeyParts>;
  bool guessed = false;
  if constexpr (!kLongestFirst) {  // ranked, a CTA's sequence is known only after the ranking
    const int64_t cta = blockIdx.x;
    const int row0 = static_cast<int>(cta % Roles::kTilesPerHead) * Roles::kRows;
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    guessed = small_start_early<Roles::kRows, Roles::kThreads>(
        args, s, cta / Roles::kTilesPerHead, row0, warp == Roles::kLoadWarp, lane);
  }
  const SmallCtaItem item = small_cta_item<kRowWarps, 4, kLongestFirst, kKeyParts>(args, s);
  SmallWalk walk;
  walk.begin = item.begin;
  walk.length = item.length;
  walk.h = item.h;
  walk.row0 = item.row0;
  // An empty sequence leaves its state at zero whatever the initial one.
  const int64_t state_at = item.head * kStateFloats;
  walk.entry = args.state && item.length > 0 ? args.state + state_at : nullptr;
  walk.output = args.output + (item.begin * kVHeads + item.h) * kHeadSize;
  walk.exit = args.new_state + state_at;
  if (threadIdx.x == 0) trace(kTraceItem);
  small_ring_start<kRowWarps, false, false, kKeyParts>(s, x);
  if (threadIdx.x == 0) trace(kTraceRingStarted);
  small_chunk_walk_decoupled<kRowWarps, true, false, __nv_bfloat16, kKeyParts>(args, walk, s, x,
                                                                              guessed);
}

}  // namespace khk::gdn_prefill
