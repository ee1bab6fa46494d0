// The correction of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): a token t of group g >= 1 gets the output
//   o_t = partial_t + E_g qmap_t,
// partial_t being its output on the walk from zero (B_g's walk) and qmap_t = scale A_{g,<=t} q_t
// the query through the group's map up to t (the identity walk's outputs), because the state at
// t is E_g A_{g,<=t} + B_{g,<=t}. So once the scan has the entry states, every group's outputs
// are one 128 x 128 by 128 x tokens product per (sequence, head, group), all at once, instead of
// a second walk of the group's chunks after the scan.
//
// On tensor cores with E_g and qmap as bf16 hi + lo pairs (hi rounded: the split is off the
// critical path here, unlike the chain's truncated one) and three products (hi hi, lo hi, hi lo):
// about 2^-17 relative per term, fp32 sums, the partial added in fp32 and the output rounded to
// bf16 once.
#pragma once

#include "small_chunk_chain.cuh"  // small_load_rows; mma_tiles.cuh: split_a_fragment, split_bf16x2
#include "small_chunk_groups.h"
#include "small_chunk_scan.cuh"  // kScanCtasPerHead: the scan's counts on `ready`
#include "sequence_order.cuh"    // sequence_of_rank
#include "trace.cuh"

namespace khk::gdn_prefill {

constexpr int kCorrectWarps = kHeadSize / 16;  // 16 value rows each
constexpr int kCorrectThreads = 32 * kCorrectWarps;
// Tokens per CTA, in slices of kSmallChunk: at most kCorrectTokens (the staged rows), and
// kCorrectFineTokens where every group of the call is short (small_correct_tile_tokens).
constexpr int kCorrectTokens = kSmallCorrectTokens;
constexpr int kCorrectFineTokens =
    kSmallCorrectFineTokens < kCorrectTokens ? kSmallCorrectFineTokens : kCorrectTokens;
constexpr int kCorrectSlices = kCorrectTokens / kSmallChunk;
static_assert(kCorrectTokens % kSmallChunk == 0 && kCorrectFineTokens % kSmallChunk == 0);

// What a CTA stages. SMALL_CORRECT_ONE_TRIP: all of its qmap rows and partials as they are in
// global memory (fp32, copied by cp.async, so that they hold no registers while in flight: the
// kernel stays within 128 registers, two CTAs per SM), the qmap split into bf16 hi and lo once
// for the CTA (SMALL_CORRECT_PRESPLIT, read by ldmatrix) or each B fragment as it is read. Row
// strides for conflict-free reads: a half-warp's 8-byte qmap fragment reads
// (4 tokens x 4 key pairs, rows of kSmallKStride floats) and a warp's partial reads (tokens 2c,
// values g: rows of kCorrectPartialStride floats) each cover the 32 banks once. Else one slice's
// qmap rows at a time, split when stored, and the partials read from global memory into
// registers. A launch asks for the bytes of the form in use (kCorrectSmemBytes).
constexpr int kCorrectPartialStride = kHeadSize + 4;
union SmallCorrectSmem {
  struct {
    float q[kCorrectTokens][kSmallKStride];          // qmap, [token][key]
    float p[kCorrectTokens][kCorrectPartialStride];  // partials, [token][value]
    // SMALL_CORRECT_PRESPLIT: q split into bf16 hi and lo once for the CTA, where each of the
    // 8 warps would split the same B fragments (every warp reads every token's qmap).
    __nv_bfloat16 qhi[kSmallCorrectPresplit ? kCorrectTokens : 1][kSmallKStride];
    __nv_bfloat16 qlo[kSmallCorrectPresplit ? kCorrectTokens : 1][kSmallKStride];
  } rows;
  struct {
    __nv_bfloat16 hi[kSmallChunk][kSmallKStride];  // [token][key]
    __nv_bfloat16 lo[kSmallChunk][kSmallKStride];
  } split;
  int64_t order[kRankScratchInt64];  // sequence_of_rank's, before either of the above is used
};
constexpr int kCorrectSmemBytes =
    kSmallCorrectOneTrip ? sizeof(SmallCorrectSmem::rows) : sizeof(SmallCorrectSmem::split);
static_assert(sizeof(SmallCorrectSmem::order) <= kCorrectSmemBytes,
              "the rank scratch fits in the bytes a launch asks for");

/// The B fragments (hi, lo) of key step k for the slice's tokens at staged row `row`: tokens
/// row + g (entries 0, 1) and row + 8 + g (entries 2, 3), keys 16k + 2c, +1 and 16k + 8 + 2c, +1.
__device__ __forceinline__ void qmap_fragments(const SmallCorrectSmem& s, int row, int k,
                                               uint32_t (&bh)[4], uint32_t (&bl)[4], int lane) {
  if constexpr (kSmallCorrectOneTrip && kSmallCorrectPresplit) {
    const int mi = lane / 8, r = lane % 8;
    ldmatrix_x4(bh, &s.rows.qhi[row + (mi / 2) * 8 + r][16 * k + (mi % 2) * 8]);
    ldmatrix_x4(bl, &s.rows.qlo[row + (mi / 2) * 8 + r][16 * k + (mi % 2) * 8]);
  } else if constexpr (kSmallCorrectOneTrip) {
    const int g = lane / 4, c = lane % 4;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float2 x =
            *reinterpret_cast<const float2*>(&s.rows.q[row + 8 * nt + g][16 * k + 8 * half + 2 * c]);
        split_bf16x2(x.x, x.y, bh[2 * nt + half], bl[2 * nt + half]);
      }
  } else {
    const int mi = lane / 8, r = lane % 8;
    ldmatrix_x4(bh, &s.split.hi[row + (mi / 2) * 8 + r][16 * k + (mi % 2) * 8]);
    ldmatrix_x4(bl, &s.split.lo[row + (mi / 2) * 8 + r][16 * k + (mi % 2) * 8]);
  }
}

/// One 16-token slice of a warp's 16 value rows (from row0): acc, holding the slice's partials,
/// gains E_g qmap from the qmap rows staged at `row` and goes out as the bf16 outputs of the
/// slice's n tokens, token t's row at out + t * kVHeads * kHeadSize.
__device__ __forceinline__ void correct_slice(float (&acc)[2][4],
                                              const uint32_t (&ehi)[kHeadSize / 16][4],
                                              const uint32_t (&elo)[kHeadSize / 16][4],
                                              const SmallCorrectSmem& s, int row, int n,
                                              __nv_bfloat16* out, int row0, int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int k = 0; k < kHeadSize / 16; ++k) {
    uint32_t bh[4], bl[4];
    qmap_fragments(s, row, k, bh, bl, lane);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      mma_bf16(acc[nt], ehi[k], bh[2 * nt], bh[2 * nt + 1]);
      mma_bf16(acc[nt], elo[k], bh[2 * nt], bh[2 * nt + 1]);
      mma_bf16(acc[nt], ehi[k], bl[2 * nt], bl[2 * nt + 1]);
    }
  }
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = 8 * nt + 2 * c + e % 2, v = row0 + g + 8 * (e / 2);
      if (t < n) out[int64_t{t} * kVHeads * kHeadSize + v] = __float2bfloat16_rn(acc[nt][e]);
    }
}

/// A warp's partials of a 16-token slice, n of them valid, as correct_slice's accumulators (zero
/// past n): token t's values at rows + t * stride (global memory, or the staged rows).
__device__ __forceinline__ void load_slice_partials(float (&acc)[2][4], const float* rows,
                                                    int64_t stride, int n, int row0, int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = 8 * nt + 2 * c + e % 2, v = row0 + g + 8 * (e / 2);
      acc[nt][e] = t < n ? rows[t * stride + v] : 0.0f;
    }
}

/// Tokens per correction CTA for a call of `total_tokens` in `groups` groups (tuning.h,
/// kSmallCorrectFineMaxGroupTokens): the host and every CTA compute it from the same two numbers.
__host__ __device__ inline int small_correct_tile_tokens(int64_t total_tokens, int groups) {
  return longest_group_tokens(total_tokens, groups) <= kSmallCorrectFineMaxGroupTokens
             ? kCorrectFineTokens
             : kCorrectTokens;
}

/// CTAs per (sequence, head, group) for a call of `total_tokens` in `groups` groups: enough
/// for the longest group any sequence can have (longest_group_tokens).
__host__ __device__ inline int64_t small_correct_tiles(int64_t total_tokens, int groups) {
  const int64_t per_cta = small_correct_tile_tokens(total_tokens, groups);
  return (longest_group_tokens(total_tokens, groups) + per_cta - 1) / per_cta;
}

/// Where a correction CTA's item sits in the grid (tile fastest): with kSmallCorrectShortFirst,
/// (sequence rank by length, shortest first; group; head h; tile), else (group; sequence and h;
/// tile). CTAs start in index order as SMs free up, so the order is the order in which the items'
/// entry states are expected (tuning.h). For the timeline micro-benchmark as well.
#define GDN_CORRECT_CTA_OF 1
__host__ __device__ inline int64_t small_correct_cta(int64_t seq_or_rank, int group, int h,
                                                     int64_t tile, int groups, int64_t num_seqs,
                                                     int64_t tiles) {
  if (kSmallCorrectShortFirst)
    return ((seq_or_rank * (groups - 1) + (group - 1)) * kVHeads + h) * tiles + tile;
  return ((group - 1) * num_seqs * kVHeads + seq_or_rank * kVHeads + h) * tiles + tile;
}

/// CTA (sequence, group 1 .. groups - 1, head, tile) in small_correct_cta's order: where the kernel
/// starts while the scan runs (programmatic dependent launch) the early groups' entry states are
/// the first ready, so their CTAs come first; a CTA of group g waits for its group's two walks
/// (the scan itself may start while the map pass runs), for group 0's walk where g = 1 (E_1 is its
/// exit) and on E_g's `ready` counter where g >= 2, for all the scan's CTAs of the head.
__global__ void __launch_bounds__(kCorrectThreads)
    small_cp_correct_kernel(PrefillArgs args, SmallGroupSpace space, int64_t tiles) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallCorrectSmem& s = *reinterpret_cast<SmallCorrectSmem*>(smem);
  const int64_t cta = blockIdx.x;
  const int64_t tile = cta % tiles, rest = cta / tiles, heads = space.num_seqs * kVHeads;
  int group, h;
  int64_t seq, begin, end;
  if (kSmallCorrectShortFirst) {
    h = static_cast<int>(rest % kVHeads);
    group = 1 + static_cast<int>(rest / kVHeads % (space.groups - 1));
    const int64_t rank = rest / kVHeads / (space.groups - 1);  // shortest first
    int64_t length;  // (s.order is free again after the CTA barrier past the waits below)
    seq = sequence_of_rank<kCorrectThreads>(args, space.num_seqs - 1 - rank, s.order, begin,
                                            length);
    end = begin + length;
  } else {
    group = 1 + static_cast<int>(rest / heads);
    seq = rest % heads / kVHeads;
    h = static_cast<int>(rest % kVHeads);
    begin = args.cu_seqlens[seq];
    end = args.cu_seqlens[seq + 1];
  }
  const int64_t head = seq * kVHeads + h;
  const GroupTokens tokens = group_tokens(end > begin ? end - begin : 0, space.groups, group);
  const int tile_tokens = small_correct_tile_tokens(args.total_tokens, space.groups);
  const int64_t from = tile * tile_tokens;
  // Every exit ends after the scan, which writes new_state after the last entry state any
  // correction waits for (end_after_prerequisite_grid).
  if (from >= tokens.count) {  // the whole CTA: no barrier is skipped by some threads only
    end_after_prerequisite_grid();
    return;
  }
  const int64_t first = begin + tokens.from + from;  // the CTA's first token
  const int64_t left = tokens.count - from;
  const int count = static_cast<int>(left < tile_tokens ? left : tile_tokens);

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (threadIdx.x == 0) {
    ready_wait(space.walk_done(head, space.zero_walk(group)), 1);
    ready_wait(space.walk_done(head, space.identity_walk(group)), 1);
    if (group == 1) ready_wait(space.walk_done(head, space.zero_walk(0)), 1);
    else ready_wait(space.ready(head, group), kScanCtasPerHead);
  }
  __syncthreads();
  trace_correct(0);
  const int row0 = 16 * warp;
  const float* partial = space.partial() + h * kHeadSize;
  const float* qmap = space.qmap() + h * kHeadSize;
  __nv_bfloat16* out = args.output + h * kHeadSize;
  constexpr int64_t kTokenStride = int64_t{kVHeads} * kHeadSize;
  if constexpr (kSmallCorrectOneTrip) {
    // The CTA's tokens' qmap rows and partials (zeros past count, up to tile_tokens: the slices
    // below read no further), then E_g's rows below: all requested before any is used.
    constexpr int kChunksPerRow = kHeadSize / 4;  // 16-byte copies
    for (int i = static_cast<int>(threadIdx.x); i < tile_tokens * kChunksPerRow;
         i += kCorrectThreads) {
      const int token = i / kChunksPerRow, at = 4 * (i % kChunksPerRow);
      const int64_t from = (first + token) * kTokenStride + at;
      copy_16b_async(&s.rows.q[token][at], qmap + from, token < count);
      copy_16b_async(&s.rows.p[token][at], partial + from, token < count);
    }
    copy_commit();
  }
  uint32_t ehi[kHeadSize / 16][4], elo[kHeadSize / 16][4];  // E_g's A fragments, per key step
  {
    float m[16][4];
    small_load_rows(m, space.exit(head, group - 1) + row0 * kHeadSize, lane);
#pragma unroll
    for (int k = 0; k < kHeadSize / 16; ++k) split_a_fragment(m[2 * k], m[2 * k + 1], ehi[k], elo[k]);
  }
  if constexpr (kSmallCorrectOneTrip) {
    copy_wait<0>();
    __syncthreads();
    if constexpr (kSmallCorrectPresplit) {  // two floats per thread and step, each split once
      for (int i = static_cast<int>(threadIdx.x); i < tile_tokens * kHeadSize / 2;
           i += kCorrectThreads) {
        const int token = i / (kHeadSize / 2), key = 2 * (i % (kHeadSize / 2));
        const float2 x = *reinterpret_cast<const float2*>(&s.rows.q[token][key]);
        uint32_t hi, lo;
        split_bf16x2(x.x, x.y, hi, lo);
        *reinterpret_cast<uint32_t*>(&s.rows.qhi[token][key]) = hi;
        *reinterpret_cast<uint32_t*>(&s.rows.qlo[token][key]) = lo;
      }
      __syncthreads();
    }
#pragma unroll
    for (int sl = 0; sl < kCorrectSlices; ++sl)
      if (kSmallChunk * sl < count) {  // CTA-uniform
        const int t0 = kSmallChunk * sl;
        float acc[2][4];
        load_slice_partials(acc, s.rows.p[t0], kCorrectPartialStride, count - t0, row0, lane);
        correct_slice(acc, ehi, elo, s, t0, count - t0, out + (first + t0) * kTokenStride, row0,
                      lane);
      }
  } else {
    for (int t0 = 0; t0 < count; t0 += kSmallChunk) {
      const int n = count - t0 < kSmallChunk ? count - t0 : kSmallChunk;
      // The slice's qmap rows, split: two floats per thread and step.
      for (int i = static_cast<int>(threadIdx.x); i < kSmallChunk * kHeadSize / 2;
           i += kCorrectThreads) {
        const int token = i / (kHeadSize / 2), key = 2 * (i % (kHeadSize / 2));
        float2 x = make_float2(0.0f, 0.0f);
        if (token < n)
          x = *reinterpret_cast<const float2*>(qmap + (first + t0 + token) * kTokenStride + key);
        uint32_t hi, lo;
        split_bf16x2(x.x, x.y, hi, lo);
        *reinterpret_cast<uint32_t*>(&s.split.hi[token][key]) = hi;
        *reinterpret_cast<uint32_t*>(&s.split.lo[token][key]) = lo;
      }
      __syncthreads();
      float acc[2][4];
      load_slice_partials(acc, partial + (first + t0) * kTokenStride, kTokenStride, n, row0, lane);
      correct_slice(acc, ehi, elo, s, 0, n, out + (first + t0) * kTokenStride, row0, lane);
      __syncthreads();  // the slice's rows are read before the next overwrites them
    }
  }
  trace_correct(1);
  end_after_prerequisite_grid();
}

}  // namespace khk::gdn_prefill
