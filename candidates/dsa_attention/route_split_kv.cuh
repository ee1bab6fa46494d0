// The split-KV route: flash-decoding over a token's selected rows. Each CTA owns one token and one
// split of its 2048 index slots (slots split, split + splits, ...: the round-robin deal spreads the
// valid rows evenly however the padding is placed). A CTA
//   1. loads its slots' indices into registers (one round trip), then compacts the valid rows
//      into shared memory in a fixed order (-1 and out-of-range entries are dropped; duplicates
//      stay, as the reference counts them twice);
//   2. gathers them 64 at a time into a two-stage ring, each row once (its 576 values are the
//      key, its first 512 the value): two bulk copies per row completing on the stage's barrier
//      (TMA_GATHER), or 72 16-byte cp.async; Q's load is issued first, before the index loads, so
//      its latency hides behind theirs;
//   3. per 64-row block: logits S = Q K^T on tensor cores (16 heads = one MMA's M; each warp takes
//      64 / WARPS rows, all 576 columns), a block-wide running max in base 2, P = 2^(S - m)
//      rounded to bf16 (the row sums add the rounded values, so the normalisation matches what
//      P V used), and O += P V (each warp owns 512 / WARPS output columns);
//   4. writes the normalised output and the base-2 LSE when it is the token's only split, else
//      its unnormalised O with (m, l) for merge_splits.cuh.
// A split with no valid row writes (m, l) = (-inf, 0), which the merge skips; a token with none
// at all gets output 0 and LSE -inf, as in the reference.
#pragma once

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#endif
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "bulk_copy.cuh"
#include "dsa_attention.cuh"
#include "merge_splits.cuh"
#include "trace.cuh"
#include "tuning.h"
#include "warp_mma.cuh"

namespace khk::dsa_attention {

// 4 warps and 64-row blocks: 8 warps and 32-row blocks (two CTAs per SM) both measured slower on
// one H200 (ROOFLINE.md).
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockRows = 64;                   // rows per gathered block
constexpr int kLogitRows = kBlockRows / kWarps;  // a warp's rows of a block's logits
constexpr int kLogitTiles = kLogitRows / 8;      // ... as 16-head x 8-row MMA tiles
constexpr int kColsPerWarp = kCkvDim / kWarps;   // a warp's output columns
constexpr int kOutTiles = kColsPerWarp / 8;      // ... as 16-head x 8-column accumulator tiles
constexpr int kStages = 2;
constexpr int kChunksPerRow = kKeyDim / 8;       // 72 16-byte pieces: 64 of ckv, then 8 of kpe
constexpr int kCkvChunks = kCkvDim / 8;
// Shared rows are padded by 16 bytes (1168 bytes apart) so the 8 rows of an ldmatrix fall in
// distinct banks; likewise P's rows (144 bytes apart).
constexpr int kRowStride = kKeyDim + 8;
constexpr int kPStride = kBlockRows + 8;
constexpr int kLogitChains = 4;                  // divides the 36 k-steps of a logit tile
// A block's rows are computed in groups of 16 (a warp's logit rows, a PV k-step): groups wholly
// past the block's last row are skipped, so a split with a few rows (one or two tokens over 16
// splits: about 2-30 rows each) pays for the rows it has, not for the 64 of a block.
constexpr int kRowGroup = 16;
constexpr int kSlotsPerThread = kTopK / kThreads;  // the most index slots a thread compacts
constexpr uint32_t kRowBytes = kKeyDim * sizeof(__nv_bfloat16);
static_assert((kKeyDim / 16) % kLogitChains == 0);
static_assert(kThreads >= 2 * kBlockRows, "a bulk gather gives each row's ckv and kpe a thread");
static_assert(kLogitTiles == 1 || kLogitTiles == 2, "BLOCK_ROWS / WARPS: 8 or 16 logit rows");
static_assert(kLogitRows % 8 == 0 && kBlockRows % kRowGroup == 0);

/// The rows of a block of `n` valid rows that the MMAs read: n rounded up to a row group.
__device__ __forceinline__ int computed_rows(int n) {
  return kRowSkip ? min(kBlockRows, (n + kRowGroup - 1) / kRowGroup * kRowGroup) : kBlockRows;
}

struct SplitSmem {
  __nv_bfloat16 rows[kStages][kBlockRows][kRowStride];
  __nv_bfloat16 q[kHeads][kRowStride];             // [q_nope | q_pe] per head
  __nv_bfloat16 p[kHeads][kPStride];               // this block's probabilities
  float warp_max[kWarps][kHeads];
  float warp_sum[kWarps][kHeads];
  uint64_t landed[kStages];                        // bulk gathers: the stage's bytes arrived
  int32_t warp_count[kWarps];
  // Then the compacted cache rows of this split, as many as it has slots: sized at launch, so
  // that more splits take less shared memory (split_smem_bytes).
};

/// The dynamic shared memory of a launch with `splits` splits per token.
inline size_t split_smem_bytes(int splits) {
  return sizeof(SplitSmem) + sizeof(int32_t) * ((kTopK + splits - 1) / splits);
}

static_assert(sizeof(SplitSmem) + sizeof(int32_t) * kTopK <= 227 * 1024,
              "above an H100/H200 SM's shared memory");
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
  extern __shared__ __align__(128) unsigned char smem_bytes[];
  SplitSmem& s = *reinterpret_cast<SplitSmem*>(smem_bytes);
  int32_t* valid_rows = reinterpret_cast<int32_t*>(smem_bytes + sizeof(SplitSmem));
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t token = blockIdx.x / splits;
  int split = static_cast<int>(blockIdx.x % splits);
  trace(kTraceSplit, 0);
  // The merge (a programmatic dependent launch) may start now; it waits for this grid's results.
#if defined(__CUDACC__)
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  if (kTmaGather && tid == 0) {
    for (int stage = 0; stage < kStages; ++stage) barrier_init(&s.landed[stage], 1);
    barrier_init_fence();  // published to the other threads by the compaction's first barrier
  }

  // 0. Q does not depend on the indices: its load overlaps the compaction's index loads.
  for (int c = tid; c < kHeads * kChunksPerRow; c += kThreads) {
    const int h = c / kChunksPerRow, piece = c % kChunksPerRow;
    const __nv_bfloat16* src =
        piece < kCkvChunks ? args.q_nope + (token * kHeads + h) * kCkvDim + piece * 8
                           : args.q_pe + (token * kHeads + h) * kKpeDim + (piece - kCkvChunks) * 8;
    gather_16b(&s.q[h][piece * 8], src, true);
  }
  gather_commit();

  // 1. The indices, all requested before any is used (slot j * splits + split for j = k * 128 +
  //    tid), then compacted in an order that is the same on every call: by a scan over the
  //    threads where a thread holds several slots, else by a ballot per 128-slot step (below).
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

  // 2. Gathers: block 0, then block 1. The cp.async form makes one commit group per block, empty
  //    ones included, so that "all but the newest group landed" always means "Q and this block
  //    landed"; the bulk form completes each block on its stage's barrier.
  auto gather_block = [&](int block, int stage) {
    const int first = block * kBlockRows;
    if constexpr (kTmaGather) {
      const int n = min(kBlockRows, count - first);
      if (tid == 0) barrier_arrive_expect(&s.landed[stage], n * kRowBytes);
      const int r = tid % kBlockRows;
      if (r < n && tid < 2 * kBlockRows) {
        const int64_t row = valid_rows[first + r];
        if (tid < kBlockRows)
          bulk_copy_to_shared(&s.rows[stage][r][0], args.ckv + row * kCkvDim,
                              kCkvDim * sizeof(__nv_bfloat16), &s.landed[stage]);
        else
          bulk_copy_to_shared(&s.rows[stage][r][kCkvDim], args.kpe + row * kKpeDim,
                              kKpeDim * sizeof(__nv_bfloat16), &s.landed[stage]);
      }
      // Rows past the count that the MMAs read: zeros (their probabilities are 0, but 0 x stale
      // bits may be NaN).
      for (int c = tid; c < (computed_rows(n) - n) * kChunksPerRow; c += kThreads)
        *reinterpret_cast<uint4*>(&s.rows[stage][n + c / kChunksPerRow][c % kChunksPerRow * 8]) =
            make_uint4(0, 0, 0, 0);
    } else {
      const int rows = computed_rows(min(kBlockRows, count - first));
      for (int c = tid; c < rows * kChunksPerRow; c += kThreads) {
        const int r = c / kChunksPerRow, piece = c % kChunksPerRow;
        const int i = first + r;
        const bool valid = i < count;
        const int64_t row = valid ? valid_rows[i] : 0;
        const __nv_bfloat16* src = piece < kCkvChunks
                                       ? args.ckv + row * kCkvDim + piece * 8
                                       : args.kpe + row * kKpeDim + (piece - kCkvChunks) * 8;
        gather_16b(&s.rows[stage][r][piece * 8], src, valid);  // rows past the count: zeros
      }
    }
  };
  if (blocks > 0) gather_block(0, 0);
  gather_commit();
  if (blocks > 1) gather_block(1, 1);
  gather_commit();

  // 3. The blocks. Lane (g, q4) holds heads g and g + 8 of every accumulator tile.
  const int g = lane / 4, q4 = lane % 4;
  float o[kOutTiles][4] = {};
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.0f, 0.0f};
  for (int block = 0; block < blocks; ++block) {
    const int stage = block % kStages;
    if constexpr (kTmaGather) {
      gather_wait<0>();  // Q
      barrier_wait(&s.landed[stage], (block / kStages) % 2);
    } else {
      gather_wait<1>();
    }
    __syncthreads();
    if (block == 0) trace(kTraceSplit, 2);  // the first block's rows landed
    const __nv_bfloat16(*rows)[kRowStride] = s.rows[stage];
    const int row0 = warp * kLogitRows;
    const int n = computed_rows(min(kBlockRows, count - block * kBlockRows));

    // kLogitChains independent accumulators per tile, summed at the end: one chain of 36
    // dependent MMAs per tile would put 36 MMA latencies on every block's critical path.
    float chain[kLogitChains][kLogitTiles][4] = {};
    if (row0 < n)  // else every row of this warp's tiles is past the count
#pragma unroll
    for (int k0 = 0; k0 < kKeyDim; k0 += 16) {
      uint32_t a[4];
      ldmatrix_x4(a, &s.q[lane % 16][k0 + (lane / 16) * 8]);
      float(&c)[kLogitTiles][4] = chain[(k0 / 16) % kLogitChains];
      if constexpr (kLogitTiles == 2) {
        uint32_t b[4];
        ldmatrix_x4(b, &rows[row0 + lane % 8 + (lane / 16) * 8][k0 + (lane / 8) % 2 * 8]);
        mma_bf16_16816(c[0], a, b[0], b[1]);
        mma_bf16_16816(c[1], a, b[2], b[3]);
      } else {
        uint32_t b[2];
        ldmatrix_x2(b, &rows[row0 + lane % 8][k0 + (lane / 8) % 2 * 8]);
        mma_bf16_16816(c[0], a, b[0], b[1]);
      }
    }
    float logit[kLogitTiles][4];
    for (int n = 0; n < kLogitTiles; ++n)
      for (int e = 0; e < 4; ++e) {
        logit[n][e] = chain[0][n][e];
        for (int c = 1; c < kLogitChains; ++c) logit[n][e] += chain[c][n][e];
      }

    // Base-2 units; rows past the split's count do not exist.
    const int first = block * kBlockRows + row0;
    float block_max[2] = {-INFINITY, -INFINITY};
    for (int n = 0; n < kLogitTiles; ++n)
      for (int e = 0; e < 4; ++e) {
        const bool exists = first + n * 8 + q4 * 2 + e % 2 < count;
        logit[n][e] = exists ? logit[n][e] * args.scale_log2 : -INFINITY;
        block_max[e / 2] = fmaxf(block_max[e / 2], logit[n][e]);
      }
    for (int i = 0; i < 2; ++i) {
      block_max[i] = fmaxf(block_max[i], __shfl_xor_sync(~0u, block_max[i], 1));
      block_max[i] = fmaxf(block_max[i], __shfl_xor_sync(~0u, block_max[i], 2));
    }
    if (q4 == 0) {
      s.warp_max[warp][g] = block_max[0];
      s.warp_max[warp][g + 8] = block_max[1];
    }
    __syncthreads();

    float m_new[2], alpha[2], sum[2] = {0.0f, 0.0f};
    for (int i = 0; i < 2; ++i) {
      m_new[i] = m_run[i];
      for (int w = 0; w < kWarps; ++w) m_new[i] = fmaxf(m_new[i], s.warp_max[w][g + 8 * i]);
      // A block holds at least one row, so m_new is finite; the guard keeps -inf - -inf out.
      if (m_new[i] == -INFINITY) m_new[i] = 0.0f;
      alpha[i] = exp2f(m_run[i] - m_new[i]);
    }
    for (int n = 0; n < kLogitTiles; ++n) {
      float p[4];
      for (int e = 0; e < 4; ++e) p[e] = exp2f(logit[n][e] - m_new[e / 2]);
      const __nv_bfloat162 p01 = __floats2bfloat162_rn(p[0], p[1]);
      const __nv_bfloat162 p23 = __floats2bfloat162_rn(p[2], p[3]);
      sum[0] += __low2float(p01) + __high2float(p01);
      sum[1] += __low2float(p23) + __high2float(p23);
      const int col = row0 + n * 8 + q4 * 2;
      *reinterpret_cast<__nv_bfloat162*>(&s.p[g][col]) = p01;
      *reinterpret_cast<__nv_bfloat162*>(&s.p[g + 8][col]) = p23;
    }
    for (int i = 0; i < 2; ++i) {
      sum[i] += __shfl_xor_sync(~0u, sum[i], 1);
      sum[i] += __shfl_xor_sync(~0u, sum[i], 2);
    }
    if (q4 == 0) {
      s.warp_sum[warp][g] = sum[0];
      s.warp_sum[warp][g + 8] = sum[1];
    }
    __syncthreads();

    for (int i = 0; i < 2; ++i) {
      float block_sum = 0.0f;
      for (int w = 0; w < kWarps; ++w) block_sum += s.warp_sum[w][g + 8 * i];
      l_run[i] = l_run[i] * alpha[i] + block_sum;
      m_run[i] = m_new[i];
    }
    for (int t = 0; t < kOutTiles; ++t) {
      o[t][0] *= alpha[0];
      o[t][1] *= alpha[0];
      o[t][2] *= alpha[1];
      o[t][3] *= alpha[1];
    }
    const int col_base = warp * kColsPerWarp;
    // Unrolled over the whole block (where calls of many tokens spend their time, every block is
    // full), each step skipped past the block's rows.
#pragma unroll
    for (int k0 = 0; k0 < kBlockRows; k0 += kRowGroup) {
      if (k0 >= n) break;
      uint32_t a[4];
      ldmatrix_x4(a, &s.p[lane % 16][k0 + (lane / 16) * 8]);
      for (int t = 0; t < kOutTiles; t += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, &rows[k0 + lane % 8 + (lane / 8) % 2 * 8]
                                  [col_base + t * 8 + (lane / 16) * 8]);
        mma_bf16_16816(o[t], a, b[0], b[1]);
        mma_bf16_16816(o[t + 1], a, b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with this stage, p and the warp sums
    if (block + kStages < blocks) gather_block(block + kStages, stage);
    gather_commit();
  }

  gather_wait<0>();  // a split with no row never waited for Q
  trace(kTraceSplit, 3);  // every block computed

  // 4. Results. m_run and l_run are the same in every warp.
  const int col_base = warp * kColsPerWarp + q4 * 2;
  for (int i = 0; i < 2; ++i) {
    const int head = g + 8 * i;
    const int64_t token_head = token * kHeads + head;
    if (splits == 1) {
      const float inv = l_run[i] > 0.0f ? 1.0f / l_run[i] : 0.0f;
      __nv_bfloat16* out = args.output + token_head * kCkvDim + col_base;
      for (int t = 0; t < kOutTiles; ++t)
        *reinterpret_cast<uint32_t*>(out + t * 8) =
            pack_bf16x2(o[t][2 * i] * inv, o[t][2 * i + 1] * inv);
      if (warp == 0 && q4 == 0)
        args.lse[token_head] = l_run[i] > 0.0f ? m_run[i] + log2f(l_run[i]) : -INFINITY;
    } else {
      const int64_t part = (token * splits + split) * kHeads + head;
      if (count > 0) {
        float* out = partials.o + part * kCkvDim + col_base;
        for (int t = 0; t < kOutTiles; ++t)
          *reinterpret_cast<float2*>(out + t * 8) = make_float2(o[t][2 * i], o[t][2 * i + 1]);
      }
      if (warp == 0 && q4 == 0)
        partials.ml[part] = make_float2(count > 0 ? m_run[i] : -INFINITY, l_run[i]);
    }
  }
  trace(kTraceSplit, 4);  // results stored (issued)
  if (kFused && merge_in_grid) {
    // Every split of every token has written its partials (the barrier orders the writes before
    // any read after it).
#if defined(__CUDACC__)
    cooperative_groups::this_grid().sync();
#else
    std::abort();  // the CTA emulator runs one CTA at a time: no grid-wide barrier on the host
#endif
    trace(kTraceSplit, 6);  // past the grid barrier
    merge_heads_in_grid(args, partials, splits, token, split);
    trace(kTraceSplit, 5);  // merged
  }
}

}  // namespace khk::dsa_attention
