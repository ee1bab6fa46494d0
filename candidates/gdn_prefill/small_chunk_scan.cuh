// The scan of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): per (sequence, head), E_{g+1} = E_g A_g + B_g for g = 1 .. groups - 1, from the E_1
// that group 0 wrote, each result over the B_g it consumed, the last (E_groups, the sequence's
// final state) into new_state. In three tf32 products (E and the map each split into tf32 hi +
// lo, ~2^-21 relative per term; bf16 pairs would add ~2^-16 per group on top of the chain's own
// rounding), fp32 sums: a product that underflows or grows does so as the recurrence would.
//
// A value row of E evolves alone (row v of E_{g+1} is row v of E_g times A_g plus row v of B_g),
// so each CTA owns kScanRowsPerCta rows for the whole scan and no CTA waits on another's rows: one
// CTA barrier per step, no cluster exchange. The products run on warpgroup MMAs
// (warpgroup_mma.cuh) in transposed form, E_{g+1}^T = A_g^T E_g^T: tf32 wgmma wants both operands
// K-major, which the rows of E are ([v][k]) and the map is not ([k][n]), so each step's map is
// loaded by all threads (a step ahead, into registers, while the previous step's products run,
// where its group's walks are already done) and stored transposed with its tf32 remainders;
// the two warpgroups each take 64 of the 128 output columns (the wgmma M), the CTA's rows are the
// wgmma N. On one H100 (bench/micro/gdn_wgmma_scan.cu) the mma.sync form this replaces took about
// 4.4 us a step with its cluster exchange; a tf32 wgmma step of 32 rows is ~0.8 us of tensor work.
//
// The scan starts while the map pass runs (route_small_chunk_cp.cuh): step s needs group s + 1's
// walks (A_{s+1}, B_{s+1}), so the CTA waits for groups 0 and 1, and each later group's walks are
// polled once a step (a relaxed read, then a fence where seen) or waited for where not yet done.
// Each CTA counts its rows of every E_g but the last on the (sequence, head)'s `ready` counter,
// for the correction where it runs beside the scan.
#pragma once

#include "bulk_copy.cuh"  // fence_proxy_async
#include "mma_tiles.cuh"
#include "small_chunk_groups.h"
#include "trace.cuh"
#include "warpgroup_mma.cuh"

namespace khk::gdn_prefill {

constexpr int kScanRowsPerCta = 32;  // the wgmma N
constexpr int kScanCtasPerHead = kHeadSize / kScanRowsPerCta;
constexpr int kScanWarpgroups = kHeadSize / 64;  // each 64 output columns: the wgmma M
constexpr int kScanThreadsPerCta = 128 * kScanWarpgroups;
constexpr int kScanMapPieces = kHeadSize * kHeadSize / 4 / kScanThreadsPerCta;  // float4 each
static_assert(kScanMapPieces * kScanThreadsPerCta * 4 == kHeadSize * kHeadSize &&
                  kScanThreadsPerCta % 32 == 0 && kScanMapPieces * (kScanThreadsPerCta / 32) ==
                                                      (kHeadSize / 4) * (kHeadSize / 32),
              "a warp's piece of the map is 4 keys x 32 columns");

struct SmallScanSmem {
  float map[kHeadSize * kHeadSize];     // A_g^T, K-major (warpgroup_mma.cuh)
  float map_lo[kHeadSize * kHeadSize];  // its tf32 remainders
  float e[kScanRowsPerCta * kHeadSize];     // the CTA's rows of E_g, K-major
  float e_lo[kScanRowsPerCta * kHeadSize];  // their tf32 remainders
  int next_seen;  // thread 0's word to the CTA: the next step's group seen done
};

/// x minus its truncation to tf32: the part the tensor cores drop, itself a tf32 to ~2^-21 |x|.
__device__ __forceinline__ float tf32_remainder(float x) {
  return x - __uint_as_float(__float_as_uint(x) & 0xffffe000u);
}

/// The thread's pieces of map A (row-major [k][n]) into registers: piece i of warp w covers keys
/// 4 kb .. 4 kb + 3 and columns 32 nb .. 32 nb + 31 of block b = i x warps + w (kb = b / 4,
/// nb = b % 4); lane l takes key 4 kb + l % 4, columns 32 nb + 4 (l / 4) .. + 3 (128 contiguous
/// bytes per key across the warp).
__device__ __forceinline__ void scan_load_map(const float* map, float4 (&piece)[kScanMapPieces],
                                              int tid) {
  const int warp = tid / 32, lane = tid % 32;
#pragma unroll
  for (int i = 0; i < kScanMapPieces; ++i) {
    const int b = i * (kScanThreadsPerCta / 32) + warp;
    const int k = 4 * (b / 4) + lane % 4, n = 32 * (b % 4) + 4 * (lane / 4);
    piece[i] = *reinterpret_cast<const float4*>(map + k * kHeadSize + n);
  }
}

/// The pieces into shared memory transposed (A^T, K-major) with their remainders. Lane l stores
/// its four columns starting from the (l / 8)-th, so that each store of the warp covers the 32
/// (column % 8, key % 4) pairs, i.e. the 32 banks.
__device__ __forceinline__ void scan_store_map(const float4 (&piece)[kScanMapPieces],
                                               SmallScanSmem& s, int tid) {
  const int warp = tid / 32, lane = tid % 32, r = lane / 8;
#pragma unroll
  for (int i = 0; i < kScanMapPieces; ++i) {
    const int b = i * (kScanThreadsPerCta / 32) + warp;
    const int k = 4 * (b / 4) + lane % 4, n = 32 * (b % 4) + 4 * (lane / 4);
    float v[4] = {piece[i].x, piece[i].y, piece[i].z, piece[i].w};
    if (r & 1) {  // rotate left by r, so that v[q] is column n + (q + r) % 4
      const float t = v[0];
      v[0] = v[1], v[1] = v[2], v[2] = v[3], v[3] = t;
    }
    if (r & 2) {
      float t = v[0];
      v[0] = v[2], v[2] = t;
      t = v[1], v[1] = v[3], v[3] = t;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int at = kmajor_offset(n + (q + r) % 4, k);
      s.map[at] = v[q];
      s.map_lo[at] = tf32_remainder(v[q]);
    }
  }
}

/// Whether group g >= 1's two walks (B_g's from zero, A_g's from the identity) are seen done now
/// (relaxed reads: a fence before relying on what they guard).
__device__ __forceinline__ bool scan_group_seen(const SmallGroupSpace& space, int64_t head, int g) {
  const bool zero = ready_seen(space.walk_done(head, space.zero_walk(g)), 1);
  const bool identity = ready_seen(space.walk_done(head, space.identity_walk(g)), 1);
  return zero && identity;
}

/// Waits until group g >= 1's two walks are done.
__device__ __forceinline__ void scan_group_wait(const SmallGroupSpace& space, int64_t head, int g) {
  ready_wait(space.walk_done(head, space.zero_walk(g)), 1);
  ready_wait(space.walk_done(head, space.identity_walk(g)), 1);
}

__global__ void __launch_bounds__(kScanThreadsPerCta, 1)
    small_cp_scan_kernel(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallScanSmem& s = *reinterpret_cast<SmallScanSmem*>(smem);
  // The correction may launch now where it is a programmatic dependent launch: it waits on
  // `ready` for each group's entry state, not for this grid's end.
  launch_dependents();
  trace_scan(0);
  const int64_t head = blockIdx.x / kScanCtasPerHead;
  const int row0 = static_cast<int>(blockIdx.x % kScanCtasPerHead) * kScanRowsPerCta;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32;
  const int wg = tid / 128, w = tid % 128 / 32, g = lane / 4, c = lane % 4;
  const int steps = space.groups - 1;
  // The thread's accumulator elements e = 0 .. 3 of tile j: column (of E_{g+1}) n, row v.
  const auto col = [&](int e) { return 64 * wg + 16 * w + g + 8 * (e / 2); };
  const auto row = [&](int j, int e) { return 8 * j + 2 * c + e % 2; };

  // Thread 0's word to the CTA after the next barrier: whether the group of the map after the next
  // step's is seen done (relaxed reads, then a fence where seen), so that the step can load that
  // map while its products run.
  const auto poll = [&](int g) {
    if (tid == 0) {
      const bool seen = g < space.groups && scan_group_seen(space, head, g);
      if (seen) acquire_fence();  // what the relaxed reads saw, ordered before later reads
      s.next_seen = seen;
    }
  };
  if (tid == 0) {
    ready_wait(space.walk_done(head, space.zero_walk(0)), 1);  // E_1
    scan_group_wait(space, head, 1);
  }
  trace_scan(1);
  poll(2);
  __syncthreads();
  float4 piece[kScanMapPieces];
  scan_load_map(space.map(head, 0), piece, tid);
  {  // E_1's rows, K-major, with their remainders
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    for (int u = tid; u < kScanRowsPerCta * kHeadSize / 4; u += kScanThreadsPerCta) {
      const int v = u / (kHeadSize / 4), k = 4 * (u % (kHeadSize / 4));
      const float4 x = *reinterpret_cast<const float4*>(e1 + v * kHeadSize + k);
      *reinterpret_cast<float4*>(&s.e[kmajor_offset(v, k)]) = x;
      *reinterpret_cast<float4*>(&s.e_lo[kmajor_offset(v, k)]) =
          make_float4(tf32_remainder(x.x), tf32_remainder(x.y), tf32_remainder(x.z),
                      tf32_remainder(x.w));
    }
  }
  scan_store_map(piece, s, tid);
  fence_proxy_async();  // the generic stores, before the tensor cores read them
  __syncthreads();

  for (int step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;
    const bool loaded = s.next_seen;  // group step + 2 seen done: its map loads during the products
    // B_{step+1} at the accumulator's places (read here, used at the end), and where E_{step+2}
    // goes: over it, or the last into new_state.
    const float* from = space.exit(head, step + 1) + row0 * kHeadSize;
    float* out = (more ? space.exit(head, step + 1) : new_state + head * kStateFloats) +
                 row0 * kHeadSize;
    float b[16];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) b[4 * j + e] = from[row(j, e) * kHeadSize + col(e)];
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[i] = 0.0f;
    const float* a = s.map + kmajor_offset(64 * wg, 0);
    const float* a_lo = s.map_lo + kmajor_offset(64 * wg, 0);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kHeadSize; k += 8) {  // the small terms first
      wgmma_tf32_m64n32k8(acc, a_lo, s.e, k);
      wgmma_tf32_m64n32k8(acc, a, s.e_lo, k);
    }
#pragma unroll
    for (int k = 0; k < kHeadSize; k += 8) wgmma_tf32_m64n32k8(acc, a, s.e, k);
    wgmma_commit();
    // While the products run: the previous step's rows counted for the correction (stored before
    // the last barrier), and the next map loaded (or this one again where the next is not known
    // done: loaded once more after the wait). The loops stay unrolled: a loop between the MMAs
    // and the wait serializes them.
    if (tid == 0 && step > 0) ready_signal(space.ready(head));  // this CTA's rows of E_{step+1}
    scan_load_map(space.map(head, loaded ? step + 1 : step), piece, tid);
    wgmma_wait_all();
    __syncthreads();  // both warpgroups' products done: the map and E_g read
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = acc[4 * j + e] + b[4 * j + e];
        out[row(j, e) * kHeadSize + col(e)] = x;
        s.e[kmajor_offset(row(j, e), col(e))] = x;
        s.e_lo[kmajor_offset(row(j, e), col(e))] = tf32_remainder(x);
      }
    if (!more) {
      trace_scan(2 + step);
      break;
    }
    if (!loaded) {
      if (tid == 0) scan_group_wait(space, head, step + 2);
      __syncthreads();
      scan_load_map(space.map(head, step + 1), piece, tid);
    }
    scan_store_map(piece, s, tid);
    fence_proxy_async();
    poll(step + 3);
    __syncthreads();  // E_{step+2}'s rows stored (shared and global), the next map in place
    trace_scan(2 + step);
  }
}

}  // namespace khk::gdn_prefill
