// The split-KV route: flash-decoding over a token's selected rows. Each CTA owns one token and one
// split of its 2048 index slots (slots split, split + splits, ...: the round-robin deal spreads the
// valid rows evenly however the padding is placed). A CTA
//   1. copies its slots' indices into shared memory (one round trip), then compacts the valid
//      rows in a fixed order (thread, then the thread's slots: the same on every call); -1 and
//      out-of-range entries are dropped, duplicates stay, as the reference counts them twice;
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

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "bulk_copy.cuh"
#include "dsa_attention.cuh"
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
constexpr uint32_t kRowBytes = kKeyDim * sizeof(__nv_bfloat16);
static_assert((kKeyDim / 16) % kLogitChains == 0);
static_assert(kThreads >= 2 * kBlockRows, "a bulk gather gives each row's ckv and kpe a thread");
static_assert(kLogitTiles == 1 || kLogitTiles == 2, "BLOCK_ROWS / WARPS: 8 or 16 logit rows");

struct SplitSmem {
  __nv_bfloat16 rows[kStages][kBlockRows][kRowStride];
  __nv_bfloat16 q[kHeads][kRowStride];             // [q_nope | q_pe] per head
  __nv_bfloat16 p[kHeads][kPStride];               // this block's probabilities
  float warp_max[kWarps][kHeads];
  float warp_sum[kWarps][kHeads];
  uint64_t landed[kStages];                        // bulk gathers: the stage's bytes arrived
  int32_t warp_count[kWarps];
  // Then, as many of each as the split has slots (sized at launch, so that more splits take less
  // shared memory: split_smem_bytes): the slots' indices as read, and the compacted cache rows.
};

/// The dynamic shared memory of a launch with `splits` splits per token.
inline size_t split_smem_bytes(int splits) {
  return sizeof(SplitSmem) + 2 * sizeof(int32_t) * ((kTopK + splits - 1) / splits);
}

static_assert(sizeof(SplitSmem) + 2 * sizeof(int32_t) * kTopK <= 227 * 1024,
              "above an H100/H200 SM's shared memory");

/// Launched on a (tokens, splits) grid.
__global__ void __launch_bounds__(kThreads, 1)
    split_kv_attention(AttentionArgs args, SplitPartials partials, int splits) {
  extern __shared__ __align__(128) unsigned char smem_bytes[];
  SplitSmem& s = *reinterpret_cast<SplitSmem*>(smem_bytes);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t token = blockIdx.x;
  const int split = static_cast<int>(blockIdx.y);
  const int slots = (kTopK - split + splits - 1) / splits;
  int32_t* slot_rows = reinterpret_cast<int32_t*>(smem_bytes + sizeof(SplitSmem));
  int32_t* valid_rows = slot_rows + (kTopK + splits - 1) / splits;
  // The merge (a programmatic dependent launch) may start now; it waits for this grid's results.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (kTmaGather && tid == 0) {
    for (int stage = 0; stage < kStages; ++stage) barrier_init(&s.landed[stage], 1);
    barrier_init_fence();  // published to the other threads by the compaction's first barrier
  }

  // 0. The indices first (the rows wait on them), then Q, which does not depend on them: both
  //    requests are in flight together, one round trip.
  const int32_t* token_slots = args.indices + token * kTopK;
#pragma unroll 1
  for (int j = tid; j < slots; j += kThreads)
    copy_4b(&slot_rows[j], token_slots + static_cast<int64_t>(j) * splits + split);
  gather_commit();
#pragma unroll 1
  for (int c = tid; c < kHeads * kChunksPerRow; c += kThreads) {
    const int h = c / kChunksPerRow, piece = c % kChunksPerRow;
    const __nv_bfloat16* src =
        piece < kCkvChunks ? args.q_nope + (token * kHeads + h) * kCkvDim + piece * 8
                           : args.q_pe + (token * kHeads + h) * kKpeDim + (piece - kCkvChunks) * 8;
    gather_16b(&s.q[h][piece * 8], src, true);
  }
  gather_commit();

  // 1. Compaction: each thread counts the valid rows among its slots (tid, tid + 128, ...), a
  //    scan over the threads places them, and a second pass writes them.
  gather_wait<1>();  // this thread's index copies
  __syncthreads();   // everyone's
  auto valid_at = [&](int j) {
    const int32_t row = slot_rows[j];
    return row >= 0 && row < args.cache_rows;
  };
  int mine = 0;
#pragma unroll 1
  for (int j = tid; j < slots; j += kThreads) mine += valid_at(j);
  int before = mine;  // inclusive scan over the warp's lanes
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int v = __shfl_up_sync(~0u, before, d);
    if (lane >= d) before += v;
  }
  if (lane == 31) s.warp_count[warp] = before;
  __syncthreads();
  before -= mine;
  int count = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    before += w < warp ? s.warp_count[w] : 0;
    count += s.warp_count[w];
  }
#pragma unroll 1
  for (int j = tid; j < slots; j += kThreads)
    if (valid_at(j)) valid_rows[before++] = slot_rows[j];
  __syncthreads();
  const int blocks = (count + kBlockRows - 1) / kBlockRows;

  // 2. Gathers of one block into a stage. The cp.async form makes one commit group per block
  //    (empty ones included, by the caller) so that "all but the newest group landed" always
  //    means "Q and this block landed"; the bulk form completes each block on its stage's
  //    barrier.
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
      // Rows past the count: zeros (their probabilities are 0, but 0 x stale bits may be NaN).
#pragma unroll 1
      for (int c = tid; c < (kBlockRows - n) * kChunksPerRow; c += kThreads)
        *reinterpret_cast<uint4*>(&s.rows[stage][n + c / kChunksPerRow][c % kChunksPerRow * 8]) =
            make_uint4(0, 0, 0, 0);
    } else {
#pragma unroll 1
      for (int c = tid; c < kBlockRows * kChunksPerRow; c += kThreads) {
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

  // 3. The blocks. Lane (g, q4) holds heads g and g + 8 of every accumulator tile.
  const int g = lane / 4, q4 = lane % 4;
  float o[kOutTiles][4] = {};
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.0f, 0.0f};
#pragma unroll 1
  for (int block = 0; block < blocks; ++block) {
    const int stage = block % kStages;
    // Block 0 and 1 first, then block + 1 into the stage the previous block freed: two blocks in
    // flight whenever there are two left.
#pragma unroll 1
    for (int b = block == 0 ? 0 : block + 1; b <= block + 1; ++b) {
      if (b < blocks) gather_block(b, b % kStages);
      gather_commit();
    }
    if constexpr (kTmaGather) {
      gather_wait<0>();  // Q
      barrier_wait(&s.landed[stage], (block / kStages) % 2);
    } else {
      gather_wait<1>();
    }
    __syncthreads();
    const __nv_bfloat16(*rows)[kRowStride] = s.rows[stage];
    const int row0 = warp * kLogitRows;

    // kLogitChains independent accumulators per tile, summed at the end: one chain of 36
    // dependent MMAs per tile would put 36 MMA latencies on every block's critical path.
    float chain[kLogitChains][kLogitTiles][4] = {};
#pragma unroll 1
    for (int k_group = 0; k_group < kKeyDim; k_group += 16 * kLogitChains)
#pragma unroll
    for (int step = 0; step < kLogitChains; ++step) {
      const int k0 = k_group + 16 * step;
      uint32_t a[4];
      ldmatrix_x4(a, &s.q[lane % 16][k0 + (lane / 16) * 8]);
      float(&c)[kLogitTiles][4] = chain[step];
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
#pragma unroll 1
    for (int k0 = 0; k0 < kBlockRows; k0 += 16) {
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
  }

  gather_wait<0>();  // a split with no row never waited for Q

  // 4. Results. m_run and l_run are the same in every warp; lane (g, q4) writes heads g and g + 8.
  const int col_base = warp * kColsPerWarp + q4 * 2;
  const int64_t head0 = token * kHeads + g, part0 = (token * splits + split) * kHeads + g;
  if (splits == 1) {
    float inv[2];
    for (int i = 0; i < 2; ++i) inv[i] = l_run[i] > 0.0f ? __fdividef(1.0f, l_run[i]) : 0.0f;
    __nv_bfloat16* out = args.output + head0 * kCkvDim + col_base;
    for (int t = 0; t < kOutTiles; ++t)
      for (int i = 0; i < 2; ++i)
        *reinterpret_cast<uint32_t*>(out + 8 * i * kCkvDim + t * 8) =
            pack_bf16x2(o[t][2 * i] * inv[i], o[t][2 * i + 1] * inv[i]);
  } else if (count > 0) {
    float* out = partials.o + part0 * kCkvDim + col_base;
    for (int t = 0; t < kOutTiles; ++t)
      for (int i = 0; i < 2; ++i)
        *reinterpret_cast<float2*>(out + 8 * i * kCkvDim + t * 8) =
            make_float2(o[t][2 * i], o[t][2 * i + 1]);
  }
  if (warp == 0 && q4 == 0) {
#pragma unroll 1
    for (int i = 0; i < 2; ++i) {
      const float m = i ? m_run[1] : m_run[0], l = i ? l_run[1] : l_run[0];
      if (splits == 1)
        args.lse[head0 + 8 * i] = l > 0.0f ? m + log2f(l) : -INFINITY;
      else
        partials.ml[part0 + 8 * i] = make_float2(count > 0 ? m : -INFINITY, l);
    }
  }
}

}  // namespace khk::dsa_attention
