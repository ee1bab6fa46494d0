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
#include "sequence_order.cuh"

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

/// A persistent wide CTA: 8 chain warps (all 128 value rows) and kProducers producer warps, CTA
/// blockIdx.x of `ctas`. The call has at most kRankMaxSeqs sequences (the dispatch checks).
template <int kProducers>
__global__ void __launch_bounds__(SmallRoles<8, kProducers>::kThreads)
    small_chunk_persistent_kernel(PrefillArgs args, int ctas) {
  constexpr int kChainWarps = 8;
  using Roles = SmallRoles<kChainWarps, kProducers>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  static_assert(kRows == kHeadSize, "a persistent CTA holds all of a head's rows");
  extern __shared__ __align__(1024) unsigned char smem[];
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  SmallQueue& q = *reinterpret_cast<SmallQueue*>(smem + sizeof(SmallSmem));
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int cta = static_cast<int>(blockIdx.x);
  const int n = static_cast<int>(args.num_seqs);
  const int64_t items = int64_t{n} * kVHeads;

  // The sequences ranked by length, longest first (ties by index).
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

  // This CTA's items: their chunks in all; an empty sequence's state ends at zero, and the tokens
  // outside every sequence get zero output (as the plain route's CTAs of the first and last
  // sequence do).
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

  // The chain warps' rows of the current item, (sequence, head) `head`: warp w holds rows
  // 16w .. 16w + 15 of its 128 x 128 state.
  const auto rows_at = [&](int64_t head) { return (head * kHeadSize + 16 * warp) * kHeadSize; };
  float m[16][4];
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
          small_store_rows(m, args.new_state + rows_at(head), lane);
          head = meta.head;
          small_load_rows(m, args.state ? args.state + rows_at(head) : nullptr, lane);
        }
        __nv_bfloat16* out = args.output + (meta.token0 * kVHeads + head % kVHeads) * kHeadSize;
        const int back = small_slot_behind(slot, kSmallChainLag);
        small_chain_step<kChainWarps>(m, s.tiles[back], s.kq[back], s.operands[ci & 1], 16 * warp,
                                      meta.count, out, lane);
      }
    } else {
      if (warp == Roles::kLoadWarp) {
        if (it < total) {
          load.reach(it, q, cta, ctas);
          const int64_t token0 = load.token(it);
          const int count = load.tokens(it);
          small_request<kRows, kSmallKqLinesOf<kChainWarps>>(
              args, s.tiles[slot], s.kq[slot], token0, count, load.h, 0, true, lane);
          if (lane == 0)
            q.meta[slot] = {token0, count, static_cast<int32_t>(load.seq * kVHeads + load.h),
                            it == load.first, 0};
        }
        copy_commit();  // one group per iteration, empty or not
        if constexpr (kProducers == 4) {
          copy_wait<1>();
          fence_proxy_async();  // for the chain's warpgroup MMAs, which read K and Q
        }
      }
      const int64_t ca = it - kSmallLoadLead;  // phase A's chunk
      if (warp == Roles::kGateWarp && ca >= 0 && ca < total) {
        if constexpr (kProducers == 2) {
          copy_wait<kSmallLoadLead>();
          fence_proxy_async();  // for the chain's warpgroup MMAs, which read K and Q
          __syncwarp();
        }
        const int back = small_slot_behind(slot, kSmallLoadLead);
        const int h = q.meta[back].head % kVHeads;
        small_gate_products(s.tiles[back], s.products[ca & 1], q.meta[back].count, h,
                            args.A_log[h], args.dt_bias[h], lane);
      }
      const int64_t cb = ca - 1;  // phase B's chunk
      if (cb >= 0 && cb < total) {
        if (warp == Roles::kSolveWarp)
          small_solve(s.products[cb & 1], s.scratch, s.operands[cb & 1], lane);
        if (warp == Roles::kScaleWarp)
          small_scale(s.products[cb & 1], s.operands[cb & 1], args.scale, lane);
      }
    }
    slot = slot + 1 == kSmallTileStages ? 0 : slot + 1;
    __syncthreads();
  }
  if (warp < kChainWarps && total > 0) small_store_rows(m, args.new_state + rows_at(head), lane);
}

#if defined(__CUDACC__)
/// `ctas` persistent wide CTAs for the call's (sequence, head) items (at most kRankMaxSeqs
/// sequences).
template <int kProducers>
cudaError_t launch_small_chunk_persistent(const PrefillArgs& args, int ctas, cudaStream_t stream) {
  using Roles = SmallRoles<8, kProducers>;
  constexpr int bytes = sizeof(SmallSmem) + sizeof(SmallQueue);
  const auto kernel = small_chunk_persistent_kernel<kProducers>;
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  kernel<<<static_cast<unsigned>(ctas), Roles::kThreads, bytes, stream>>>(args, ctas);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
