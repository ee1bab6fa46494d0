// The split-KV route: flash-decoding over a token's selected rows. Each CTA (one warpgroup) owns
// one token and one split of its 2048 index slots (slots split, split + splits, ...: the
// round-robin deal spreads the valid rows evenly however the padding is placed). A CTA
//   1. loads its slots' indices into registers (one round trip), then compacts the valid rows
//      into shared memory (-1 and out-of-range entries are dropped; duplicates stay, as the
//      reference counts them twice);
//   2. gathers them 64 at a time into a two-stage ring, each row once (its 576 values are the
//      key, its first 512 the value), as 72 16-byte cp.async per row, each piece to its place in
//      the swizzled layout the tensor cores read (smem_layout.cuh); Q's load is issued first,
//      before the index loads, so its latency hides behind theirs;
//   3. per 64-row block: logits, a block-wide running max in base 2, P and O += P V on the
//      warpgroup's tensor cores (block_attention.cuh);
//   4. writes the normalised output and the base-2 LSE when it is the token's only split, else
//      its unnormalised O with (m, l) for merge_splits.cuh.
// A split with no valid row writes (m, l) = (-inf, 0), which the merge skips; a token with none
// at all gets output 0 and LSE -inf, as in the reference.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "async_copy.cuh"
#include "block_attention.cuh"
#include "dsa_attention.cuh"
#include "merge_splits.cuh"
#include "smem_layout.cuh"
#include "trace.cuh"
#include "tuning.h"

namespace khk::dsa_attention {

constexpr int kStages = 2;
constexpr int kChunksPerRow = kKeyDim / 8;       // 72 16-byte pieces: 64 of ckv, then 8 of kpe
constexpr int kCkvChunks = kCkvDim / 8;
constexpr int kSlotsPerThread = kTopK / kThreads;  // the most index slots a thread compacts
static_assert(kBlockRows % kRowGroup == 0);

/// The rows of a block of `n` valid rows that the output MMAs read: n rounded up to a row group.
__device__ __forceinline__ int computed_rows(int n) {
  return kRowSkip ? min(kBlockRows, (n + kRowGroup - 1) / kRowGroup * kRowGroup) : kBlockRows;
}

/// At a 1024-byte aligned shared address (the swizzle's period).
struct SplitSmem {
  unsigned char rows[kStages][kRowsStageBytes];
  unsigned char q[kQBytes];                        // [q_nope | q_pe] per head
  unsigned char p[kPBytes];                        // this block's probabilities
  SoftmaxSmem softmax;
  int32_t warp_count[kWarps];
  // Then the compacted cache rows of this split, as many as it has slots: sized at launch, so
  // that more splits take less shared memory (split_smem_bytes).
};
constexpr size_t kSmemAlignment = kSwizzleBytes;

/// The dynamic shared memory of a launch with `splits` splits per token (with the slack that
/// aligns SplitSmem).
inline size_t split_smem_bytes(int splits) {
  return kSmemAlignment + sizeof(SplitSmem) + sizeof(int32_t) * ((kTopK + splits - 1) / splits);
}

static_assert(kSmemAlignment + sizeof(SplitSmem) + sizeof(int32_t) * kTopK <= 227 * 1024,
              "above an H100/H200 SM's shared memory");
static_assert(grid_merge_floats(kMergeMaxSplits) * sizeof(float) <= sizeof(SplitSmem::rows),
              "the in-grid merge's (m, l) and weights reuse the gather stages");
static_assert(kHeads * kStagingStride * sizeof(float) <= sizeof(SplitSmem::rows),
              "the results are staged in the gather stages");
static_assert(kCkvDim / 4 == kThreads, "the in-grid merge gives each thread one quad of a head");

/// Launched with tokens x splits CTAs; kFused (a few tokens) cooperatively, every CTA resident at
/// once: the token's splits are merged in this grid behind a grid-wide barrier, or, where every
/// token has at most kSingleCtaMaxRows rows, the first CTA of each token takes all of them and
/// the others leave (no partials, no barrier).
/// Two instantiations, so that the route of many tokens carries none of the fused route's code.
template <bool kFused>
__global__ void __launch_bounds__(kThreads, 1)
    split_kv_attention(AttentionArgs args, SplitPartials partials, int splits) {
  bool merge_in_grid = kFused;  // until every token turns out to have few rows
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem_bytes =
      smem_raw + ((kSmemAlignment - (smem_address(smem_raw) % kSmemAlignment)) % kSmemAlignment);
  SplitSmem& s = *reinterpret_cast<SplitSmem*>(smem_bytes);
  int32_t* valid_rows = reinterpret_cast<int32_t*>(smem_bytes + sizeof(SplitSmem));
  const uint32_t rows_at = smem_address(s.rows), q_at = smem_address(s.q), p_at = smem_address(s.p);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t token = blockIdx.x / splits;
  int split = static_cast<int>(blockIdx.x % splits);
  trace(kTraceSplit, 0);
  // The merge (a programmatic dependent launch) may start now; it waits for this grid's results.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");

  // 0. Q does not depend on the indices: its load overlaps the compaction's index loads.
  for (int c = tid; c < kHeads * kChunksPerRow; c += kThreads) {
    const int h = c / kChunksPerRow, piece = c % kChunksPerRow;
    const __nv_bfloat16* src =
        piece < kCkvChunks ? args.q_nope + (token * kHeads + h) * kCkvDim + piece * 8
                           : args.q_pe + (token * kHeads + h) * kKpeDim + (piece - kCkvChunks) * 8;
    gather_16b(q_at + swizzled_piece(kQColumnBytes, h, piece), src, true);
  }
  gather_commit();

  // 1. The indices, all requested before any is used (slot j * splits + split for j = k * 128 +
  //    tid), then compacted: each thread counts its valid ones, a scan over the threads places
  //    them (in thread, then k order: the same on every call).
  //    Fused, every CTA reads every token's indices and counts their valid rows, so that all take
  //    the same way; when no token has more than kSingleCtaMaxRows, each token's first CTA keeps
  //    its token's indices as read (its slots with splits = 1) and the others leave.
  int32_t slot_row[kSlotsPerThread];
  bool have_slots = false;
  if constexpr (kFused) {
    int counts = 0;  // token t's count in bits 16 t to 16 t + 15 (at most 2048 each)
#pragma unroll
    for (int t = 0; t < kFusedMaxTokens; ++t)
#pragma unroll
      for (int k = 0; k < kSlotsPerThread; ++k) {
        const int32_t row = t < args.tokens ? args.indices[t * kTopK + k * kThreads + tid] : -1;
        counts += (row >= 0 && row < args.cache_rows) << (16 * t);
        if (t == token) slot_row[k] = row;
      }
    counts = __reduce_add_sync(~0u, counts);
    if (lane == 0) s.warp_count[warp] = counts;
    __syncthreads();
    counts = 0;
    for (int w = 0; w < kWarps; ++w) counts += s.warp_count[w];
    __syncthreads();
    if ((counts & 0xffff) <= kSingleCtaMaxRows && (counts >> 16) <= kSingleCtaMaxRows) {
      if (split != 0) return;
      splits = 1;  // this CTA takes the token's every slot and writes its results
      merge_in_grid = false;
      have_slots = true;
    }
  }
  const int slots = (kTopK - split + splits - 1) / splits;
  if (!have_slots) {
    const int32_t* slot_rows = args.indices + token * kTopK;
#pragma unroll
    for (int k = 0; k < kSlotsPerThread; ++k) {
      const int j = k * kThreads + tid;
      slot_row[k] = j < slots ? slot_rows[j * splits + split] : -1;
    }
  }
  // A scan where threads hold several slots (few splits; one CTA taking a whole token), else the
  // ballot of one 128-slot step (on one H200 the scan was 1-3 % slower at 8 tokens x 16 splits,
  // one slot a thread).
  int count = 0;
  if (slots > kThreads) {
    int mine = 0;
#pragma unroll
    for (int k = 0; k < kSlotsPerThread; ++k)
      mine += slot_row[k] >= 0 && slot_row[k] < args.cache_rows;
    int before = mine;  // inclusive scan over the warp's lanes
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int v = __shfl_up_sync(~0u, before, d);
      if (lane >= d) before += v;
    }
    if (lane == 31) s.warp_count[warp] = before;
    __syncthreads();
    before -= mine;
    for (int w = 0; w < kWarps; ++w) {
      before += w < warp ? s.warp_count[w] : 0;
      count += s.warp_count[w];
    }
#pragma unroll
    for (int k = 0; k < kSlotsPerThread; ++k)
      if (slot_row[k] >= 0 && slot_row[k] < args.cache_rows) valid_rows[before++] = slot_row[k];
    __syncthreads();
  } else {  // in slot order, 128 slots per step
#pragma unroll
    for (int k = 0; k < kSlotsPerThread; ++k) {
      if (k * kThreads >= slots) break;  // the same for every thread
      const int32_t row = slot_row[k];
      const bool valid = row >= 0 && row < args.cache_rows;
      const unsigned ballot = __ballot_sync(~0u, valid);
      if (lane == 0) s.warp_count[warp] = __popc(ballot);
      __syncthreads();
      int before = count, total = 0;
      for (int w = 0; w < kWarps; ++w) {
        before += w < warp ? s.warp_count[w] : 0;
        total += s.warp_count[w];
      }
      if (valid) valid_rows[before + __popc(ballot & ((1u << lane) - 1))] = row;
      count += total;
      __syncthreads();
    }
  }
  const int blocks = (count + kBlockRows - 1) / kBlockRows;
  trace(kTraceSplit, 1);  // indices landed and compacted

  // 2. Gathers: block 0, then block 1, one commit group per block, empty ones included, so that
  //    "all but the newest group landed" always means "Q and this block landed". Rows past the
  //    count that the output MMAs read are zeros (their probabilities are 0, but 0 x stale bits
  //    may be NaN); the logits of rows past them are dropped by a select.
  auto gather_block = [&](int block, int stage) {
    const int first = block * kBlockRows;
    const int n = min(kBlockRows, count - first);
    const uint32_t tile = rows_at + stage * kRowsStageBytes;
    for (int c = tid; c < computed_rows(n) * kChunksPerRow; c += kThreads) {
      const int r = c / kChunksPerRow, piece = c % kChunksPerRow;
      const bool valid = r < n;
      const int64_t row = valid ? valid_rows[first + r] : 0;
      const __nv_bfloat16* src = piece < kCkvChunks
                                     ? args.ckv + row * kCkvDim + piece * 8
                                     : args.kpe + row * kKpeDim + (piece - kCkvChunks) * 8;
      gather_16b(tile + swizzled_piece(kRowsColumnBytes, r, piece), src, valid);
    }
  };
  if (blocks > 0) gather_block(0, 0);
  gather_commit();
  if (blocks > 1) gather_block(1, 1);
  gather_commit();

  // 3. The blocks.
  SplitAttention attention;
  for (int block = 0; block < blocks; ++block) {
    const int stage = block % kStages;
    gather_wait<1>();
    fence_async_proxy();  // the landed rows (and Q), for the tensor cores
    __syncthreads();
    if (block == 0) trace(kTraceSplit, 2);  // the first block's rows landed
    const int first = block * kBlockRows;
    attention.block(rows_at + stage * kRowsStageBytes, q_at, p_at, s.p, s.softmax, first, count,
                    computed_rows(min(kBlockRows, count - first)), args.scale_log2);
    __syncthreads();  // every warp is done with this stage, P and the softmax scratch
    if (block + kStages < blocks) gather_block(block + kStages, stage);
    gather_commit();
  }

  gather_wait<0>();  // a split with no row never waited for Q
  trace(kTraceSplit, 3);  // every block computed

  // 4. Results, staged in the gather stages (free: the loop ended with a barrier).
  attention.store(args, partials, reinterpret_cast<float*>(s.rows), s.softmax, token, splits, split,
                  count);
  trace(kTraceSplit, 4);  // results stored (issued)
  if (kFused && merge_in_grid) {
    // Every split of every token has written its partials (the barrier orders the writes before
    // any read after it); the gather stages are free for the merge's weights.
    cooperative_groups::this_grid().sync();
    trace(kTraceSplit, 6);  // past the grid barrier
    merge_heads_in_grid(args, partials, splits, token, split, reinterpret_cast<float*>(s.rows));
    trace(kTraceSplit, 5);  // merged
  }
}

}  // namespace khk::dsa_attention
