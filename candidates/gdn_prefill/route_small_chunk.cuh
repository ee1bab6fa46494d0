// The small-chunk route: the delta rule in chunks of 16 tokens, one CTA per (sequence, value head,
// tile of kSmallRows value rows), one launch. The chunked route's 64-token chunks pay a 64x64
// inverse, W and P per chunk on their chain; at 16 tokens that key-only work is a few hundred
// cycles of producer warps, run ahead of the chain, and the chain's warps do only the four
// state products (small_chunk_chain.cuh), each a handful of tensor-core MMAs. Warp roles and the
// pipeline: small_chunk_layout.h; the producers: small_chunk_producer.cuh.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "small_chunk_chain.cuh"
#include "small_chunk_producer.cuh"

namespace khk::gdn_prefill {

/// Ring slot `slot - back` of the tile ring (0 <= back < kSmallTileStages).
__device__ __forceinline__ int small_slot_behind(int slot, int back) {
  const int behind = slot - back;
  return behind < 0 ? behind + kSmallTileStages : behind;
}

/// Tokens of chunk `ci` of a sequence of `length` tokens (the last one may be partial).
__host__ __device__ inline int small_chunk_tokens(int64_t length, int64_t ci) {
  const int64_t left = length - ci * kSmallChunk;
  return static_cast<int>(left < kSmallChunk ? left : kSmallChunk);
}

/// Phase B of chunk `cb` of `chunks` on the solve and scale warps (nothing outside the walk).
template <class Roles>
__device__ __forceinline__ void small_phase_b(const PrefillArgs& args, SmallSmem& s, int64_t cb,
                                              int64_t chunks, int warp, int lane) {
  if (cb < 0 || cb >= chunks) return;
  if (warp == Roles::kSolveWarp)
    small_solve(s.products[cb & 1], s.scratch, s.operands[cb & 1], lane);
  if (warp == Roles::kScaleWarp)
    small_scale(s.products[cb & 1], s.operands[cb & 1], args.scale, lane);
}

/// The producer warps' part of iteration `it` of a walk of `length` tokens from token `begin`
/// (`slot` = it % kSmallTileStages): chunk it's requests, phase A of chunk it - kSmallLoadLead,
/// phase B of the chunk before that (small_chunk_layout.h has the roles).
template <int kRowWarps, int kProducers>
__device__ __forceinline__ void small_produce(const PrefillArgs& args, SmallSmem& s, int64_t it,
                                              int slot, int64_t begin, int64_t length, int h,
                                              int row0, bool values, float A_log, float dt_bias,
                                              int warp, int lane) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  const int64_t chunks = (length + kSmallChunk - 1) / kSmallChunk;
  const auto chunk_count = [&](int64_t ci) { return small_chunk_tokens(length, ci); };
  if (warp == Roles::kLoadWarp) {
    if (it < chunks)
      small_request<Roles::kRows>(args, s.tiles[slot], begin + it * kSmallChunk, chunk_count(it),
                                  h, row0, values, lane);
    copy_commit();  // one group per iteration, empty or not
    // Four producers: chunk it - 1 has landed, and the barrier publishes it to the gate warp.
    if constexpr (kProducers == 4) copy_wait<1>();
  }
  const int64_t ca = it - kSmallLoadLead;  // phase A's chunk
  if (warp == Roles::kGateWarp && ca >= 0 && ca < chunks) {
    if constexpr (kProducers == 2) {  // the warp's own requests of chunks <= ca have landed
      copy_wait<kSmallLoadLead>();
      __syncwarp();
    }
    small_gate_products(s.tiles[small_slot_behind(slot, kSmallLoadLead)], s.products[ca & 1],
                        chunk_count(ca), h, A_log, dt_bias, lane);
  }
  small_phase_b<Roles>(args, s, ca - 1, chunks, warp, lane);
}

/// Zeroes the CTA's kRows rows of the output for tokens [from, to) (clamped to [0, T)).
template <int kRows, int kThreads>
__device__ __forceinline__ void small_clear_rows(const PrefillArgs& args, int64_t from, int64_t to,
                                                 int h, int row0) {
  from = from < 0 ? 0 : from;
  to = to > args.total_tokens ? args.total_tokens : to;
  for (int64_t i = threadIdx.x; i < (to - from) * kRows; i += kThreads)
    args.output[((from + i / kRows) * kVHeads + h) * kHeadSize + row0 + i % kRows] =
        __float2bfloat16_rn(0.0f);
}

/// Zeroes every tile's V rows (all kThreads threads): a map's walk has zero values, so it requests
/// none and zeroes them once.
template <int kThreads>
__device__ __forceinline__ void small_zero_value_tiles(SmallSmem& s) {
  constexpr int kPerTile = kSmallChunk * kSmallKStride;
  for (int i = static_cast<int>(threadIdx.x); i < kSmallTileStages * kPerTile; i += kThreads)
    (&s.tiles[i / kPerTile].v[0][0])[i % kPerTile] = __float2bfloat16_rn(0.0f);
}

/// What one CTA of the context-parallel form (route_small_chunk_cp.cuh) walks: `length` tokens
/// from `begin` of value head h, its kRows state rows from row0 of the head's 128x128 matrices.
struct SmallWalk {
  int64_t begin = 0, length = 0;
  int h = 0, row0 = 0;
  const float* entry = nullptr;     // the head's state to start from; null: zero rows
  __nv_bfloat16* output = nullptr;  // token `begin`'s output row of head h (bf16 outputs)
  float* partial = nullptr;         // the same row of a workspace array (fp32 outputs)
  float* exit = nullptr;            // the head's matrix the rows end in; null: not stored
  float* exit_lo = nullptr;         // a map walk's: where exit's tf32 remainders go (exit then
                                    // holds the map transposed: small_store_rows_transposed)
};

/// A walk's rows at its end into walk.exit: a map (kIdentity) transposed with its remainders, as
/// the scan takes it (small_chunk_groups.h), other states as rows.
template <bool kIdentity>
__device__ __forceinline__ void small_store_exit(const float (&m)[16][4], float scale,
                                                 const SmallWalk& walk, int r0, int lane) {
  if (!walk.exit) return;
  if constexpr (kIdentity) small_store_rows_transposed(m, walk.exit, walk.exit_lo, r0, lane, scale);
  else small_store_rows(m, walk.exit + int64_t{r0} * kHeadSize, lane, scale);
}

/// The pipelined walk of one CTA of kRowWarps chain warps and kProducers producer warps. kOutput:
/// the walk writes its outputs, as bf16 to walk.output or (Out = float) as fp32 to walk.partial,
/// else none. kIdentity: it starts from identity rows with zero values (a group's state map;
/// walk.entry unused; its outputs are the queries through the map). All are compile-time, so
/// each walk compiles only its own chain variant.
template <int kRowWarps, int kProducers, bool kOutput = true, bool kIdentity = false,
          typename Out = __nv_bfloat16>
__device__ __forceinline__ void small_chunk_walk(const PrefillArgs& args, const SmallWalk& walk,
                                                 SmallSmem& s) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  constexpr int kThreads = Roles::kThreads;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int h = walk.h, row0 = walk.row0;
  constexpr bool values = !kIdentity;
  if constexpr (kIdentity) small_zero_value_tiles<kThreads>(s);

  // The chain warps' rows.
  float m[16][4], scale = 1.0f;  // the rows, held as m * scale (small_update_rows)
  const int64_t rows_at = (row0 + 16 * warp) * kHeadSize;
  if (warp < kRowWarps) {
    if constexpr (kIdentity) small_identity_rows(m, row0 + 16 * warp, lane);
    else small_load_rows(m, walk.entry ? walk.entry + rows_at : nullptr, lane);
  }

  Out* output = nullptr;
  if constexpr (std::is_same_v<Out, float>) output = walk.partial;
  else output = walk.output;
  const int64_t length = walk.length;
  const int64_t chunks = (length + kSmallChunk - 1) / kSmallChunk;
  const float A_log = args.A_log[h], dt_bias = args.dt_bias[h];
  int slot = 0;  // it % kSmallTileStages
  for (int64_t it = 0; chunks > 0 && it < chunks + kSmallChainLag; ++it) {
    const int64_t ci = it - kSmallChainLag;  // the chain's chunk
    if (warp < kRowWarps) {
      if (ci >= 0) {
        small_chain_chunk<kOutput>(
            m, scale, s.tiles[small_slot_behind(slot, kSmallChainLag)], s.operands[ci & 1],
            16 * warp, small_chunk_tokens(length, ci),
            kOutput ? output + ci * kSmallChunk * kVHeads * kHeadSize + row0 : nullptr, lane);
      }
    } else {
      small_produce<kRowWarps, kProducers>(args, s, it, slot, walk.begin, length, h, row0, values,
                                           A_log, dt_bias, warp, lane);
    }
    slot = slot + 1 == kSmallTileStages ? 0 : slot + 1;
    __syncthreads();
  }
  if (warp < kRowWarps) small_store_exit<kIdentity>(m, scale, walk, row0 + 16 * warp, lane);
}

/// What a plain-route CTA walks: the (sequence, head) of CTA blockIdx.x and its row tile.
struct SmallCtaItem {
  int64_t head;  // sequence * 8 + h
  int64_t begin, length;
  int h, row0;
};

/// The plain route's CTA prologue (both pipelines; kKeyParts: the CTA's threads, as SmallRoles):
/// its item, by index or (kLongestFirst) by rank b / (8 x tiles per head) of the sequences by
/// length, longest first (sequence_order.cuh; it uses s.order and CTA barriers); the tokens
/// outside every sequence cleared.
template <int kRowWarps, int kProducers, bool kLongestFirst, int kKeyParts = 1>
__device__ __forceinline__ SmallCtaItem small_cta_item(const PrefillArgs& args, SmallSmem& s) {
  using Roles = SmallRoles<kRowWarps, kProducers, kKeyParts>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  SmallCtaItem item;
  const int64_t cta = blockIdx.x;
  const int tile = static_cast<int>(cta % Roles::kTilesPerHead);
  item.head = cta / Roles::kTilesPerHead;  // sequence * 8 + h (its rank * 8 + h, ranked)
  item.h = static_cast<int>(item.head % kVHeads);
  int64_t seq = item.head / kVHeads;
  item.row0 = tile * kRows;
  if constexpr (kLongestFirst) {
    seq = sequence_of_rank<kThreads>(args, seq, s.order, item.begin, item.length);
    item.head = seq * kVHeads + item.h;
    item.length = item.length > 0 ? item.length : 0;
  } else {  // as before the ranking, so that this kernel compiles to the same code
    item.begin = args.cu_seqlens[seq];
    const int64_t end = args.cu_seqlens[seq + 1];
    item.length = end > item.begin ? end - item.begin : 0;
  }
  // Tokens outside every sequence get zero output, as in the reference.
  if (seq == 0) small_clear_rows<kRows, kThreads>(args, 0, item.begin, item.h, item.row0);
  if (seq == args.num_seqs - 1)
    small_clear_rows<kRows, kThreads>(args, item.begin + item.length, args.total_tokens, item.h,
                                      item.row0);
  return item;
}

/// The plain route: one CTA per (sequence, head, row tile) walks the whole sequence. Its loop is
/// small_chunk_walk's, written out: with the earlier two-producer loop, going through the walk
/// (SmallWalk from blockIdx) took the narrow CTA from 214 to 168 registers and the plain route
/// measured 4 % slower at 64-8191 tokens on one H200. With the shared producer step
/// (small_produce) both forms take 167-168 registers, so the two loops can become one once a
/// measurement shows the walk costs nothing.
/// kLongestFirst: CTA b walks the sequence of rank b / (8 x tiles per head) by length, longest
/// first (sequence_order.cuh), else of index b / (8 x tiles per head). A template argument, so
/// that the index-order kernel is the one it was (a run-time flag cost its narrow CTAs a spill).
template <int kRowWarps, int kProducers = 2, bool kLongestFirst = false>
__global__ void __launch_bounds__(SmallRoles<kRowWarps, kProducers>::kThreads)
    small_chunk_kernel(PrefillArgs args) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const SmallCtaItem item = small_cta_item<kRowWarps, kProducers, kLongestFirst>(args, s);
  const int64_t head = item.head, begin = item.begin, length = item.length;
  const int h = item.h, row0 = item.row0;

  // The chain warps' rows; an empty sequence leaves its state at zero whatever the initial one.
  float m[16][4], scale = 1.0f;  // the rows, held as m * scale (small_update_rows)
  const int64_t rows_at = (head * kHeadSize + row0 + 16 * warp) * kHeadSize;
  if (warp < kRowWarps)
    small_load_rows(m, args.state && length > 0 ? args.state + rows_at : nullptr, lane);

  const int64_t chunks = (length + kSmallChunk - 1) / kSmallChunk;
  const float A_log = args.A_log[h], dt_bias = args.dt_bias[h];
  int slot = 0;  // it % kSmallTileStages
  for (int64_t it = 0; chunks > 0 && it < chunks + kSmallChainLag; ++it) {
    const int64_t ci = it - kSmallChainLag;  // the chain's chunk
    if (warp < kRowWarps) {
      if (ci >= 0) {
        __nv_bfloat16* out =
            args.output + ((begin + ci * kSmallChunk) * kVHeads + h) * kHeadSize + row0;
        small_chain_chunk(m, scale, s.tiles[small_slot_behind(slot, kSmallChainLag)],
                          s.operands[ci & 1], 16 * warp, small_chunk_tokens(length, ci), out, lane);
      }
    } else {
      small_produce<kRowWarps, kProducers>(args, s, it, slot, begin, length, h, row0, true, A_log,
                                           dt_bias, warp, lane);
    }
    slot = slot + 1 == kSmallTileStages ? 0 : slot + 1;
    __syncthreads();
  }
  if (warp < kRowWarps) small_store_rows(m, args.new_state + rows_at, lane, scale);
}

}  // namespace khk::gdn_prefill
