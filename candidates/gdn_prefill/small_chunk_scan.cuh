// The scan of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): per (sequence, head), E_{g+1} = E_g A_g + B_g for g = 1 .. groups - 1, from the E_1
// that group 0 wrote, each result over the B_g it consumed, the last (E_groups, the sequence's
// final state) into new_state. On tensor cores in three tf32 products (E and the map each split
// into tf32 hi + lo, ~2^-21 relative per term; bf16 pairs would add ~2^-16 per group on top of
// the chain's own rounding), fp32 sums: a product that underflows or grows does so as the
// recurrence would.
//
// Each step reads a whole 64 KB map for every block of value rows, so few rows per CTA make the
// L2 traffic the limit (8 rows per CTA on 128 SMs: 8 MB per step, about 2 us on one H200,
// bench/micro/gdn_scan.cu), and many rows per CTA make one SM's FMAs the limit. So a CTA computes
// a kScanRowsPerCta x kScanCols block of E_{g+1}: kScanCluster CTAs, a thread-block cluster, share
// a block of rows, each reading only its kScanCols columns of each map (each map read
// kHeadSize / kScanRowsPerCta times per head instead of 16), and after each step every CTA stores
// its columns of E_{g+1} into every CTA's copy of the rows (distributed shared memory), one
// cluster barrier per step. The map columns stream through shared memory by cp.async,
// kScanStages - 1 maps ahead; a step's B block is loaded a step ahead into registers. Each CTA
// counts its block of every E_g but the last on the (sequence, head)'s `ready` counter, for the
// correction where it runs beside the scan.
#pragma once

#include "cluster_exchange.cuh"  // cluster_sync, store_to_cluster
#include "mma_tiles.cuh"         // copy_16b_async, copy_commit, copy_wait
#include "small_chunk_groups.h"

namespace khk::gdn_prefill {

#if defined(__CUDACC__)
constexpr int kScanCluster = 2;  // CTAs per block of rows, each half of the columns
#else
constexpr int kScanCluster = 1;  // the host emulator runs one CTA at a time: all columns
#endif
constexpr int kScanRowsPerCta = 32;
constexpr int kScanCols = kHeadSize / kScanCluster;
constexpr int kScanCtasPerHead = kHeadSize / kScanRowsPerCta * kScanCluster;
constexpr int kScanTileWarps = 8;  // warps sharing the CTA's output tiles
constexpr int kScanKSplit = 2;     // ... times this many, each summing a share of the keys
constexpr int kScanWarps = kScanTileWarps * kScanKSplit;
constexpr int kScanThreadsPerCta = 32 * kScanWarps;
constexpr int kScanKeys = kHeadSize / kScanKSplit;  // a warp's keys
constexpr int kScanMTiles = kScanRowsPerCta / 16;   // m16n8k8 tiles of rows
constexpr int kScanNTiles = kScanCols / 8;
constexpr int kScanWarpNTiles = kScanNTiles * kScanMTiles / kScanTileWarps;
constexpr int kScanStages = 3;
constexpr int kScanEStride = kHeadSize + 4;  // fragment reads conflict-free
constexpr int kScanAStride = kScanCols + 4;
static_assert(kScanWarpNTiles >= 1 && kScanNTiles % (kScanTileWarps / kScanMTiles) == 0,
              "the warps share the tiles evenly");

struct SmallScanSmem {
  float a[kScanStages][kHeadSize][kScanAStride];  // the CTA's columns of the maps, in a ring
  float e[2][kScanRowsPerCta][kScanEStride];      // the rows of E_g, then of E_{g+1}
  float4 partial[kScanKSplit - 1][kScanTileWarps][kScanWarpNTiles][32];  // other keys' sums
};

/// Requests the CTA's columns [col0, col0 + kScanCols) of map `step` (if there is one); one
/// commit group either way.
__device__ __forceinline__ void scan_request_map(const SmallGroupSpace& space, int64_t head,
                                                 int step, int steps, int col0,
                                                 SmallScanSmem& s) {
  if (step < steps) {
    const float* from = space.map(head, step) + col0;
    float(&to)[kHeadSize][kScanAStride] = s.a[step % kScanStages];
    constexpr int kPiecesPerRow = kScanCols / 4;
    for (int u = static_cast<int>(threadIdx.x); u < kHeadSize * kPiecesPerRow;
         u += kScanThreadsPerCta) {
      const int k = u / kPiecesPerRow, piece = u % kPiecesPerRow;
      copy_16b_async(&to[k][4 * piece], from + k * kHeadSize + 4 * piece, true);
    }
  }
  copy_commit();
}

__global__ void KHK_CLUSTER_DIMS(kScanCluster) __launch_bounds__(kScanThreadsPerCta, 1)
    small_cp_scan_kernel(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallScanSmem& s = *reinterpret_cast<SmallScanSmem*>(smem);
#if defined(__CUDACC__)
  // The correction may launch now where it is a programmatic dependent launch: it waits on
  // `ready` for each group's entry state, not for this grid's end.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  const int64_t head = blockIdx.x / kScanCtasPerHead;
  const int in_head = static_cast<int>(blockIdx.x % kScanCtasPerHead);
  const int rank = in_head % kScanCluster;  // a 1-D cluster of consecutive CTAs
  const int row0 = in_head / kScanCluster * kScanRowsPerCta, col0 = rank * kScanCols;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  // The warp's tiles: rows m0 .. m0 + 15, columns n0(j) .. n0(j) + 7 of the CTA's block, keys
  // [key0, key0 + kScanKeys).
  const int tile_warp = warp % kScanTileWarps, split = warp / kScanTileWarps;
  const int m0 = 16 * (tile_warp % kScanMTiles), key0 = split * kScanKeys;
  const auto n0 = [&](int j) {
    return 8 * (tile_warp / kScanMTiles + j * (kScanTileWarps / kScanMTiles));
  };
  const int steps = space.groups - 1;

  for (int step = 0; step + 1 < kScanStages; ++step)
    scan_request_map(space, head, step, steps, col0, s);
  {  // E_1's rows, all columns, into this CTA's copy
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    for (int u = tid; u < kScanRowsPerCta * kHeadSize / 4; u += kScanThreadsPerCta) {
      const int row = u / (kHeadSize / 4), col = 4 * (u % (kHeadSize / 4));
      *reinterpret_cast<float4*>(&s.e[0][row][col]) =
          *reinterpret_cast<const float4*>(e1 + row * kHeadSize + col);
    }
  }
  // The thread's accumulator elements: rows m0 + g (+ 8), columns n0(j) + 2c (+ 1); B_g's
  // pairs at the same places, a step ahead.
  const auto at = [&](int j, int half) {
    return (row0 + m0 + g + 8 * half) * kHeadSize + col0 + n0(j) + 2 * c;
  };
  float2 b[kScanWarpNTiles][2];
  if (split == 0) {  // only the first key share's warps finish E_{g+1}
    const float* b1 = space.exit(head, 1);
#pragma unroll
    for (int j = 0; j < kScanWarpNTiles; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        b[j][half] = *reinterpret_cast<const float2*>(b1 + at(j, half));
  }
  copy_wait<kScanStages - 2>();  // map 0 (this thread's pieces)
  cluster_sync();                // every thread's pieces; the CTAs of the cluster all running

  for (int step = 0; step < steps; ++step) {
    scan_request_map(space, head, step + kScanStages - 1, steps, col0, s);
    const float(&a)[kHeadSize][kScanAStride] = s.a[step % kScanStages];
    const float(&e)[kScanRowsPerCta][kScanEStride] = s.e[step & 1];
    // Six accumulators per tile (the three products, even and odd key steps): independent
    // chains, so the MMAs' latencies overlap instead of adding up along the keys. The tf32
    // pairs split by truncation (mma_tiles.cuh).
    float acc[kScanWarpNTiles][6][4] = {};
#pragma unroll
    for (int step8 = 0; step8 < kScanKeys / 8; ++step8) {
      const int k = key0 + 8 * step8, p = step8 % 2;
      uint32_t ehi[4], elo[4];
      split_tf32_truncated(e[m0 + g][k + c], ehi[0], elo[0]);
      split_tf32_truncated(e[m0 + g + 8][k + c], ehi[1], elo[1]);
      split_tf32_truncated(e[m0 + g][k + c + 4], ehi[2], elo[2]);
      split_tf32_truncated(e[m0 + g + 8][k + c + 4], ehi[3], elo[3]);
#pragma unroll
      for (int j = 0; j < kScanWarpNTiles; ++j) {
        uint32_t bhi0, blo0, bhi1, blo1;
        split_tf32_truncated(a[k + c][n0(j) + g], bhi0, blo0);
        split_tf32_truncated(a[k + c + 4][n0(j) + g], bhi1, blo1);
        mma_tf32(acc[j][3 * p], elo, bhi0, bhi1);
        mma_tf32(acc[j][3 * p + 1], ehi, blo0, blo1);
        mma_tf32(acc[j][3 * p + 2], ehi, bhi0, bhi1);
      }
    }
#pragma unroll
    for (int j = 0; j < kScanWarpNTiles; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)  // small terms first
        acc[j][0][i] = ((acc[j][0][i] + acc[j][3][i]) + (acc[j][1][i] + acc[j][4][i])) +
                       (acc[j][2][i] + acc[j][5][i]);
    if (kScanKSplit > 1) {  // the other key shares' sums into the first share's warps
      if (split > 0) {
#pragma unroll
        for (int j = 0; j < kScanWarpNTiles; ++j)
          s.partial[split - 1][tile_warp][j][lane] =
              make_float4(acc[j][0][0], acc[j][0][1], acc[j][0][2], acc[j][0][3]);
      }
      __syncthreads();
      if (split == 0) {
#pragma unroll
        for (int j = 0; j < kScanWarpNTiles; ++j)
#pragma unroll
          for (int from = 0; from + 1 < kScanKSplit; ++from) {
            const float4 q = s.partial[from][tile_warp][j][lane];
            acc[j][0][0] += q.x, acc[j][0][1] += q.y, acc[j][0][2] += q.z, acc[j][0][3] += q.w;
          }
      }
    }
    // E_{g+1} for g = step + 1, over B_g, or the last into new_state: the first key share's
    // warps' to finish.
    const bool more = step + 1 < steps;
    if (split == 0) {
      float* out = more ? space.exit(head, step + 1) : new_state + head * kStateFloats;
      const float* next_b = more ? space.exit(head, step + 2) : nullptr;
#pragma unroll
      for (int j = 0; j < kScanWarpNTiles; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float2 x = make_float2(acc[j][0][2 * half] + b[j][half].x,
                                       acc[j][0][2 * half + 1] + b[j][half].y);
          *reinterpret_cast<float2*>(out + at(j, half)) = x;
          if (more) {
            float* to = &s.e[(step + 1) & 1][m0 + g + 8 * half][col0 + n0(j) + 2 * c];
            for (int cta = 0; cta < kScanCluster; ++cta) store_to_cluster(to, cta, x);
            b[j][half] = *reinterpret_cast<const float2*>(next_b + at(j, half));
          }
        }
    }
    if (!more) break;  // no CTA stores into another's shared memory after this
    copy_wait<kScanStages - 2>();  // map step + 1 (this thread's pieces)
    cluster_sync();  // E_{g+1} whole in every CTA, map step + 1 landed, E_g and map step read
    if (tid == 0) ready_signal(space.ready(head));  // this CTA's block of E_{g+1} is stored
  }
}

}  // namespace khk::gdn_prefill
