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
// cluster barrier per step. The map columns stream through shared memory by cp.async, up to
// kScanStages - 1 maps ahead of the step as far as their groups' walks are done (the scan starts
// while the map pass runs, and where the groups grow the later ones are still walking: each
// step waits only for its own group's walks, `walk_done`); a step's B block is loaded into
// registers at its start, used at its end. Each CTA counts its block of every E_g but the last on
// E_g's `ready` counter, for the correction where it runs beside the scan.
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
  int avail;  // groups 1 .. avail whose walks are known done (thread 0's word to the CTA)
};

/// Requests the CTA's columns [col0, col0 + kScanCols) of map m (A_{m+1}); one commit group.
__device__ __forceinline__ void scan_request_map(const SmallGroupSpace& space, int64_t head, int m,
                                                 int col0, SmallScanSmem& s) {
  const float* from = space.map(head, m) + col0;
  float(&to)[kHeadSize][kScanAStride] = s.a[m % kScanStages];
  constexpr int kPiecesPerRow = kScanCols / 4;
  for (int u = static_cast<int>(threadIdx.x); u < kHeadSize * kPiecesPerRow;
       u += kScanThreadsPerCta) {
    const int k = u / kPiecesPerRow, piece = u % kPiecesPerRow;
    copy_16b_async(&to[k][4 * piece], from + k * kHeadSize + 4 * piece, true);
  }
  copy_commit();
}

/// Waits until group g >= 1's two walks (B_g's from zero, A_g's from the identity) are done.
__device__ __forceinline__ void scan_group_wait(const SmallGroupSpace& space, int64_t head, int g) {
  ready_wait(space.walk_done(head, space.zero_walk(g)), 1);
  ready_wait(space.walk_done(head, space.identity_walk(g)), 1);
}

__global__ void KHK_CLUSTER_DIMS(kScanCluster) __launch_bounds__(kScanThreadsPerCta, 1)
    small_cp_scan_kernel(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallScanSmem& s = *reinterpret_cast<SmallScanSmem*>(smem);
  // The correction may launch now where it is a programmatic dependent launch: it waits on
  // `ready` for each group's entry state, not for this grid's end.
  launch_dependents();
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

  // This grid may run beside the map pass (route_small_chunk_cp.cuh): step s needs group s + 1's
  // walks (A_{s+1}, B_{s+1}), so the CTA waits for groups 0 and 1, and asks for the later
  // groups' maps as soon as their walks are seen done (polled once a step, one group at a time),
  // as far ahead as the ring of maps reaches.
  if (tid == 0) {
    ready_wait(space.walk_done(head, space.zero_walk(0)), 1);  // E_1
    scan_group_wait(space, head, 1);
    int avail = 1;
    while (avail < steps && avail + 1 < kScanStages &&
           ready_seen(space.walk_done(head, space.zero_walk(avail + 1)), 1) &&
           ready_seen(space.walk_done(head, space.identity_walk(avail + 1)), 1))
      ++avail;
    if (avail > 1) gpu_fence();  // what the relaxed reads saw, ordered before later reads
    s.avail = avail;
  }
  __syncthreads();
  int avail = s.avail, requested = 0;  // maps asked for: 0 .. requested - 1
  while (requested < avail && requested + 1 < kScanStages)
    scan_request_map(space, head, requested++, col0, s);
  {  // E_1's rows, all columns, into this CTA's copy
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    for (int u = tid; u < kScanRowsPerCta * kHeadSize / 4; u += kScanThreadsPerCta) {
      const int row = u / (kHeadSize / 4), col = 4 * (u % (kHeadSize / 4));
      *reinterpret_cast<float4*>(&s.e[0][row][col]) =
          *reinterpret_cast<const float4*>(e1 + row * kHeadSize + col);
    }
  }
  // The thread's accumulator elements: rows m0 + g (+ 8), columns n0(j) + 2c (+ 1).
  const auto at = [&](int j, int half) {
    return (row0 + m0 + g + 8 * half) * kHeadSize + col0 + n0(j) + 2 * c;
  };
  cluster_sync();  // E_1 in shared memory; the CTAs of the cluster all running

  for (int step = 0; step < steps; ++step) {
    if (avail < step + 1) {  // group step + 1 not seen done yet: wait for it
      if (tid == 0) scan_group_wait(space, head, step + 1);
      avail = step + 1;
      __syncthreads();
    }
    while (requested < avail && requested < step + kScanStages)
      scan_request_map(space, head, requested++, col0, s);
    float2 b[kScanWarpNTiles][2];  // B_{step+1} at the accumulator's places, for the finish
    if (split == 0) {  // only the first key share's warps finish E_{g+1}
      const float* from = space.exit(head, step + 1);
#pragma unroll
      for (int j = 0; j < kScanWarpNTiles; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          b[j][half] = *reinterpret_cast<const float2*>(from + at(j, half));
    }
    // Map `step` landed (this thread's pieces): at most requested - step - 1 later ones in flight.
    const int later = requested - step - 1;
    if (later >= 2) copy_wait<2>();
    else if (later == 1) copy_wait<1>();
    else copy_wait<0>();
    __syncthreads();  // every thread's pieces
    // The next group's flags, read now and looked at after the products.
    int seen_zero = 0, seen_identity = 0;
    if (tid == 0 && avail < steps) {
      seen_zero = ready_seen(space.walk_done(head, space.zero_walk(avail + 1)), 1);
      seen_identity = ready_seen(space.walk_done(head, space.identity_walk(avail + 1)), 1);
    }
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
          }
        }
    }
    if (!more) break;  // no CTA stores into another's shared memory after this
    if (tid == 0) {
      const bool seen = seen_zero && seen_identity;
      if (seen) gpu_fence();  // what the relaxed reads saw, ordered before later reads
      s.avail = avail + seen;
    }
    cluster_sync();  // E_{g+1} whole in every CTA, E_g and map step read, s.avail written
    if (tid == 0) ready_signal(space.ready(head, step + 2));  // its block of E_{step+2} stored
    avail = s.avail;
  }
}

}  // namespace khk::gdn_prefill
