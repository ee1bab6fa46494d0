// The small-chunk route's wide CTAs made persistent. A wide CTA (one per SM) walks one (sequence,
// head) and pays the pipeline's fill and drain for it: kSmallChainLag iterations before its first
// chain step, about a third of the walk at 8192 tokens over 57 sequences (9 chunks each on
// average). Here a fixed grid of CTAs takes the call's (sequence, head) items in turn and walks
// them as one stream of chunks: the producers request and prepare the next item's chunks while
// the chain finishes the last one's, and the chain warps only store one item's state rows and
// load the next one's at the switch.
//
// The items in rank order (sequence_order.cuh's longest first; rank r's sequence with heads
// 0..7 are items 8r..8r+7) are dealt to the CTAs in snake order: round k deals items
// [k P, (k + 1) P) to CTAs 0..P-1 forward in even rounds and backward in odd ones, so that the
// CTA given a round's longest item gets the next round's shortest.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "route_small_chunk.cuh"
#include "route_small_chunk_decoupled.cuh"
#include "sequence_order.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

/// What the later roles need of a chunk the load warp requested, in the ring beside its tiles:
/// only the load warp walks the item list, so the chain warps, at the register limit of a wide
/// CTA, hold no cursor of their own.
struct SmallChunkMeta {
  int64_t token0;      // the chunk's first token
  int32_t count;       // its tokens
  int32_t head;        // sequence * 8 + h
  int32_t starts_item; // the first chunk of its (sequence, head)
  int32_t pad;
};

/// The call's sequences as the persistent CTAs read them, and the chunks' metadata, in shared
/// memory after SmallSmem.
struct SmallQueue {
  int64_t cu[kRankMaxSeqs + 1];    // cu_seqlens
  int32_t by_rank[kRankMaxSeqs];   // the sequence of each rank, longest first
  SmallChunkMeta meta[kSmallTileStages];
};

/// The item CTA `cta` of `ctas` takes in round k (possibly past the call's last item).
__host__ __device__ inline int64_t snake_item(int64_t k, int cta, int ctas) {
  return k * ctas + ((k & 1) ? ctas - 1 - cta : cta);
}

/// One role's place in its CTA's stream of chunks: the item holding the role's current chunk.
struct SmallItemCursor {
  int64_t round = -1;   // the CTA's round of the item; -1 before the first
  int64_t first = 0;    // the stream index of the item's first chunk
  int64_t chunks = 0;
  int64_t seq = 0, begin = 0, length = 0;
  int h = 0;

  /// Moves to the item that holds stream chunk g (at or after the current one; g must lie within
  /// the CTA's stream), past empty items.
  __device__ __forceinline__ void reach(int64_t g, const SmallQueue& q, int cta, int ctas) {
    while (round < 0 || g >= first + chunks) {
      first += chunks;
      const int64_t item = snake_item(++round, cta, ctas);
      seq = q.by_rank[item / kVHeads];
      h = static_cast<int>(item % kVHeads);
      begin = q.cu[seq];
      const int64_t end = q.cu[seq + 1];
      length = end > begin ? end - begin : 0;
      chunks = (length + kSmallChunk - 1) / kSmallChunk;
    }
  }
  /// Tokens of stream chunk g, and its first token.
  __device__ __forceinline__ int tokens(int64_t g) const {
    return small_chunk_tokens(length, g - first);
  }
  __device__ __forceinline__ int64_t token(int64_t g) const {
    return begin + (g - first) * kSmallChunk;
  }
};

/// The persistent CTAs' start (every thread): the sequences ranked by length, longest first (ties
/// by index), into q; an empty sequence's state zeroed, the tokens outside every sequence given
/// zero output (as the plain route's CTAs of the first and last sequence do); returns the chunks
/// of CTA `cta`'s items in all.
template <int kThreads>
__device__ __forceinline__ int64_t small_persistent_start(const PrefillArgs& args, SmallQueue& q,
                                                          int cta, int ctas) {
  constexpr int kRows = kHeadSize;
  const int n = static_cast<int>(args.num_seqs);
  const int64_t items = int64_t{n} * kVHeads;
  for (int i = static_cast<int>(threadIdx.x); i <= n; i += kThreads) q.cu[i] = args.cu_seqlens[i];
  __syncthreads();
  for (int sq = static_cast<int>(threadIdx.x); sq < n; sq += kThreads) {
    const int64_t len = q.cu[sq + 1] - q.cu[sq];
    int before = 0;
    int64_t start = q.cu[0];
    for (int j = 0; j < n; ++j) {
      const int64_t end = q.cu[j + 1], other = end - start;
      before += other > len || (other == len && j < sq);
      start = end;
    }
    q.by_rank[before] = sq;
  }
  __syncthreads();
  int64_t total = 0;
  for (int64_t k = 0; k * ctas < items; ++k) {
    const int64_t item = snake_item(k, cta, ctas);
    if (item >= items) continue;
    const int64_t seq = q.by_rank[item / kVHeads];
    const int h = static_cast<int>(item % kVHeads);
    const int64_t begin = q.cu[seq], end = q.cu[seq + 1];
    const int64_t length = end > begin ? end - begin : 0;
    total += (length + kSmallChunk - 1) / kSmallChunk;
    if (seq == 0) small_clear_rows<kRows, kThreads>(args, 0, begin, h, 0);
    if (seq == n - 1) small_clear_rows<kRows, kThreads>(args, begin + length, args.total_tokens, h, 0);
    if (length == 0) {
      float* rows = args.new_state + (seq * kVHeads + h) * kStateFloats;
      for (int i = static_cast<int>(threadIdx.x); i < kStateFloats; i += kThreads) rows[i] = 0.0f;
    }
  }
  return total;
}

/// A persistent wide CTA: 8 chain warps (all 128 value rows) and kProducers producer warps, CTA
/// blockIdx.x of `ctas`. The call has at most kRankMaxSeqs sequences (the dispatch checks).
template <int kProducers>
__global__ void __launch_bounds__(SmallRoles<8, kProducers>::kThreads)
    small_chunk_persistent_kernel(PrefillArgs args, int ctas) {
  constexpr int kChainWarps = 8;
  using Roles = SmallRoles<kChainWarps, kProducers>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  static_assert(kRows == kHeadSize, "a persistent CTA holds all of a head's rows");
  extern __shared__ __align__(16) unsigned char smem[];
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  SmallQueue& q = *reinterpret_cast<SmallQueue*>(smem + sizeof(SmallSmem));
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int cta = static_cast<int>(blockIdx.x);
  const int64_t total = small_persistent_start<kThreads>(args, q, cta, ctas);

  // The chain warps' rows of the current item, (sequence, head) `head`: warp w holds rows
  // 16w .. 16w + 15 of its 128 x 128 state.
  const auto rows_at = [&](int64_t head) { return (head * kHeadSize + 16 * warp) * kHeadSize; };
  float m[16][4], scale = 1.0f;  // the rows, held as m * scale (small_update_rows)
  int64_t head = 0;
  if (warp < kChainWarps && total > 0) {
    SmallItemCursor first;
    first.reach(0, q, cta, ctas);
    head = first.seq * kVHeads + first.h;
    small_load_rows(m, args.state ? args.state + rows_at(head) : nullptr, lane);
  }
  SmallItemCursor load;  // the load warp's
  int slot = 0;  // it % kSmallTileStages
  for (int64_t it = 0; total > 0 && it < total + kSmallChainLag; ++it) {
    const int64_t ci = it - kSmallChainLag;  // the chain's chunk
    if (warp < kChainWarps) {
      if (ci >= 0) {
        const SmallChunkMeta& meta = q.meta[small_slot_behind(slot, kSmallChainLag)];
        if (meta.starts_item && ci > 0) {  // the next item: the last one's rows out, its rows in
          small_store_rows(m, args.new_state + rows_at(head), lane, scale);
          head = meta.head;
          small_load_rows(m, args.state ? args.state + rows_at(head) : nullptr, lane);
          scale = 1.0f;
        }
        __nv_bfloat16* out = args.output + (meta.token0 * kVHeads + head % kVHeads) * kHeadSize;
        small_chain_chunk(m, scale, s.tiles[small_slot_behind(slot, kSmallChainLag)],
                          s.operands[ci & 1], 16 * warp, meta.count, out, lane);
      }
    } else {
      if (warp == Roles::kLoadWarp) {
        if (it < total) {
          load.reach(it, q, cta, ctas);
          const int64_t token0 = load.token(it);
          const int count = load.tokens(it);
          small_request<kRows>(args, s.tiles[slot], token0, count, load.h, 0, true, lane);
          if (lane == 0)
            q.meta[slot] = {token0, count, static_cast<int32_t>(load.seq * kVHeads + load.h),
                            it == load.first, 0};
        }
        copy_commit();  // one group per iteration, empty or not
        if constexpr (kProducers == 4) copy_wait<1>();
      }
      const int64_t ca = it - kSmallLoadLead;  // phase A's chunk
      if (warp == Roles::kGateWarp && ca >= 0 && ca < total) {
        if constexpr (kProducers == 2) {
          copy_wait<kSmallLoadLead>();
          __syncwarp();
        }
        const int back = small_slot_behind(slot, kSmallLoadLead);
        const int h = q.meta[back].head % kVHeads;
        small_gate_products(s.tiles[back], s.products[ca & 1], q.meta[back].count, h,
                            args.A_log[h], args.dt_bias[h], lane);
      }
      small_phase_b<Roles>(args, s, ca - 1, total, warp, lane);
    }
    slot = slot + 1 == kSmallTileStages ? 0 : slot + 1;
    __syncthreads();
  }
  if (warp < kChainWarps && total > 0)
    small_store_rows(m, args.new_state + rows_at(head), lane, scale);
}

/// The persistent wide CTA with its roles decoupled (route_small_chunk_decoupled.cuh has the
/// rings): each role walks the CTA's stream of chunks in its own loop. The load warp's lane 0
/// writes a chunk's metadata beside its tiles and releases it with a plain arrival on the tile's
/// `full` barrier besides the lanes' arrivals on their copies; the gate warp and the chain read it
/// after their wait on that barrier and before they free the tile.
__global__ void __launch_bounds__(SmallRoles<8, 4>::kThreads)
    small_chunk_persistent_decoupled_kernel(PrefillArgs args, int ctas) {
  constexpr int kChainWarps = 8;
  using Roles = SmallRoles<kChainWarps, 4>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  SmallQueue& q = *reinterpret_cast<SmallQueue*>(smem + sizeof(SmallSmem));
  SmallRing& ring = s.ring;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int cta = static_cast<int>(blockIdx.x);
  const int64_t total = small_persistent_start<kThreads>(args, q, cta, ctas);
  small_ring_start<kChainWarps, false, true>(s);

  if (warp < kChainWarps) {  // the chain, item after item
    const auto rows_at = [&](int64_t head) { return (head * kHeadSize + 16 * warp) * kHeadSize; };
    float m[16][4], scale = 1.0f;  // the rows, held as m * scale (small_update_rows)
    int64_t head = 0;
    if (total > 0) {  // the first item's rows, while its first chunk loads
      SmallItemCursor first;
      first.reach(0, q, cta, ctas);
      head = first.seq * kVHeads + first.h;
      small_load_rows(m, args.state ? args.state + rows_at(head) : nullptr, lane);
    }
    small_chain_loop(s, total, warp, [&](int64_t ci, int tile, int op, auto wait_operands) {
      const SmallChunkMeta& meta = q.meta[tile];
      if (meta.starts_item && ci > 0) {  // the next item: the last one's rows out, its rows in
        small_store_rows(m, args.new_state + rows_at(head), lane, scale);
        head = meta.head;
        small_load_rows(m, args.state ? args.state + rows_at(head) : nullptr, lane);
        scale = 1.0f;
      }
      __syncwarp();
      __nv_bfloat16* out = args.output + (meta.token0 * kVHeads + head % kVHeads) * kHeadSize;
      small_chain_chunk(m, scale, s.tiles[tile], s.operands[op], 16 * warp, meta.count, out, lane,
                        wait_operands);
    });
    if (total > 0) small_store_rows(m, args.new_state + rows_at(head), lane, scale);
  } else if (warp == Roles::kLoadWarp) {
    SmallItemCursor load;
    RingCursor<kSmallTileStages> tile;
    for (int64_t c = 0; c < total; ++c) {
      ring_wait(&ring.tiles_empty[tile.slot], tile.parity ^ 1);
      load.reach(c, q, cta, ctas);
      const int64_t token0 = load.token(c);
      const int count = load.tokens(c);
      small_request<kRows>(args, s.tiles[tile.slot], token0, count, load.h, 0, true, lane);
      if (lane == 0)
        q.meta[tile.slot] = {token0, count, static_cast<int32_t>(load.seq * kVHeads + load.h),
                             c == load.first, 0};
      ring_arrive_on_copies(&ring.tiles_full[tile.slot]);
      if (lane == 0) ring_arrive(&ring.tiles_full[tile.slot]);  // the metadata
      tile.advance();
    }
    copy_commit();
    copy_wait<0>();  // no copy outlives the warp
  } else if (warp == Roles::kGateWarp) {
    RingCursor<kSmallTileStages> tile;
    RingCursor<2> prod;
    for (int64_t c = 0; c < total; ++c) {
      ring_wait(&ring.tiles_full[tile.slot], tile.parity);
      ring_wait(&ring.products_empty[prod.slot], prod.parity ^ 1);
      __syncwarp();
      const SmallChunkMeta& meta = q.meta[tile.slot];
      const int h = meta.head % kVHeads;
      small_gate_products<!kSmallScaleQK>(s.tiles[tile.slot], s.products[prod.slot], meta.count,
                                          h, args.A_log[h], args.dt_bias[h], lane);
      ring_arrive(&ring.products_full[prod.slot]);
      ring_arrive(&ring.tiles_empty[tile.slot]);
      tile.advance();
      prod.advance();
    }
  } else {
    small_solve_or_scale(args, s, s.scratch, total, warp == Roles::kSolveWarp, 0, lane);
  }
}

#if defined(__CUDACC__)
/// `ctas` persistent wide CTAs for the call's (sequence, head) items (at most kRankMaxSeqs
/// sequences), decoupled where SMALL_DECOUPLED asks and the CTA has four producers.
template <int kProducers>
cudaError_t launch_small_chunk_persistent(const PrefillArgs& args, int ctas, cudaStream_t stream) {
  using Roles = SmallRoles<8, kProducers>;
  constexpr int bytes = sizeof(SmallSmem) + sizeof(SmallQueue);
  const auto kernel = [] {
    if constexpr (kSmallDecoupled && kProducers == 4)
      return small_chunk_persistent_decoupled_kernel;
    else return small_chunk_persistent_kernel<kProducers>;
  }();
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  kernel<<<static_cast<unsigned>(ctas), Roles::kThreads, bytes, stream>>>(args, ctas);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
