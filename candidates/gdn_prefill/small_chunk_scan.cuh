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
// K-major, which the rows of E are ([v][k]) and the map is not ([k][n]), so the map pass stores
// each map transposed into that layout with its tf32 remainders (small_chunk_groups.h), and the
// scan takes them by bulk copies into a ring of kScanMapBuffers buffers (tuning.h): with two, the
// next step's remainders are copied once this step's products that read them are done and its
// map once the others are, so the next step's first products (the remainders') overlap the map's
// landing; with three, the next remainders as the step starts and the next map once this step's
// remainders are read. The two warpgroups each take 64 of the
// 128 output columns (the wgmma M), the CTA's rows are the wgmma N. On one H100 (2026-12-07,
// bench/micro/gdn_scan.cu) the form that loaded each map into registers and stored it transposed
// took 4.9 us a step, 1.6 us of it the transposed stores and ~1 us the map's exposed load;
// the tensor work is ~1.1 us.
//
// The scan starts while the map pass runs (route_small_chunk_cp.cuh): step s needs group s + 1's
// walks (A_{s+1}, B_{s+1}), so the CTA waits for groups 0 and 1, and each later group's walks are
// polled once a step (a relaxed read, then a fence where seen) or waited for where not yet done.
// Each CTA counts its rows of every E_g but the last on E_g's `ready` counter, for the correction
// where it runs beside the scan.
#pragma once

#include "bulk_copy.cuh"  // fence_proxy_async
#include "mma_tiles.cuh"
#include "small_chunk_groups.h"
#include "trace.cuh"
#include "warpgroup_mma.cuh"

// For bench/micro/gdn_scan.cu: the maps in the workspace are transposed with their remainders.
#define GDN_SCAN_MAP_KMAJOR 1

namespace khk::gdn_prefill {

constexpr int kScanRowsPerCta = 32;  // the wgmma N
constexpr int kScanCtasPerHead = kHeadSize / kScanRowsPerCta;
constexpr int kScanWarpgroups = kHeadSize / 64;  // each 64 output columns: the wgmma M
constexpr int kScanThreadsPerCta = 128 * kScanWarpgroups;
struct SmallScanSmem {
  float maps[kScanMapBuffers][kHeadSize * kHeadSize];  // A_g^T, K-major (warpgroup_mma.cuh), or
                                                       // its tf32 remainders: scan_fill
  float e[kScanRowsPerCta * kHeadSize];     // the CTA's rows of E_g, K-major
  float e_lo[kScanRowsPerCta * kHeadSize];  // their tf32 remainders
  uint64_t landed[kScanMapBuffers];  // each buffer's bulk copy, one phase per fill
  int next_seen[2];  // thread 0's word to the CTA, step s's at s % 2: its next group seen done
};

constexpr uint32_t kScanMapBytes = sizeof(float) * kHeadSize * kHeadSize;

/// The maps' copies into the buffers, in the order the steps read them: fill 2 m is step m's
/// remainders, fill 2 m + 1 its map, each into buffer fill % kScanMapBuffers on that buffer's
/// barrier, whose (fill / kScanMapBuffers)-th phase it completes.
__device__ __forceinline__ int scan_fill_buffer(int fill) { return fill % kScanMapBuffers; }
__device__ __forceinline__ uint32_t scan_fill_parity(int fill) {
  return static_cast<uint32_t>(fill / kScanMapBuffers) & 1;
}

/// Fill `fill`'s bulk copy, by the one thread that issues the scan's copies, once the buffer's
/// earlier fill has been read by every product that uses it.
__device__ __forceinline__ void scan_fill(const SmallGroupSpace& space, int64_t head, int fill,
                                          SmallScanSmem& s) {
  const int m = fill / 2, buffer = scan_fill_buffer(fill);
  barrier_arrive_expect(&s.landed[buffer], kScanMapBytes);
  bulk_copy_to_shared(s.maps[buffer], fill % 2 ? space.map(head, m) : space.map_lo(head, m),
                      kScanMapBytes, &s.landed[buffer]);
}

/// Waits for fill `fill`; returns its buffer.
__device__ __forceinline__ const float* scan_filled(SmallScanSmem& s, int fill) {
  const int buffer = scan_fill_buffer(fill);
  barrier_wait(&s.landed[buffer], scan_fill_parity(fill));
  __syncwarp();  // the lanes may leave the wait apart; the wgmma that follow are warp-collective
  return s.maps[buffer];
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

  // Thread 0's word to the CTA for step `step`, read after the next CTA barrier: whether group
  // step + 2 is seen done (relaxed reads, then fences where seen: thread 0 copies its map during
  // the step). Step s + 1's is polled while step s's products run, so that the poll's round trip
  // is not on the step's path (at the step's end it cost ~0.5 us a step with the CTA waiting).
  const auto poll = [&](int step) {
    if (tid == 0) {
      const int g = step + 2;
      const bool seen = g < space.groups && scan_group_seen(space, head, g);
      if (seen) {
        acquire_fence();  // what the relaxed reads saw, ordered before later reads
        fence_proxy_async_global();  // ... and before the bulk copies' reads
      }
      s.next_seen[step & 1] = seen;
    }
  };
  // E_1 (group 0's walk, which ends first) is loaded while thread 0 waits for group 1's walks and
  // then starts the first maps' copies.
  if (tid == 0) {
    for (int i = 0; i < kScanMapBuffers; ++i) barrier_init(&s.landed[i], 1);
    ready_wait(space.walk_done(head, space.zero_walk(0)), 1);  // E_1
  }
  __syncthreads();  // the barriers initialised, E_1 done
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
  fence_proxy_async();  // the generic stores, before the tensor cores read them
  if (tid == 0) {
    scan_group_wait(space, head, 1);
    fence_proxy_async_global();
    scan_fill(space, head, 0, s);
    scan_fill(space, head, 1, s);
  }
  trace_scan(1);
  poll(0);
  __syncthreads();  // E_1's rows stored, group 1 done

  for (int step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;
    const bool copy_early = more && s.next_seen[step & 1];  // copy the next maps during products
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
    // With three buffers the next remainders' buffer is free now (its last fill, the map before
    // this step's, was read by the last step's products).
    if (kScanMapBuffers == 3 && tid == 0 && copy_early) scan_fill(space, head, 2 * step + 2, s);
    // The small terms first, in two groups: A's remainders (their buffer is free once the first
    // group is done), then E's remainders and the main term through A.
    const int wg_rows = kmajor_offset(64 * wg, 0);
    const float* a_lo = scan_filled(s, 2 * step) + wg_rows;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kHeadSize; k += 8) wgmma_tf32_m64n32k8(acc, a_lo, s.e, k);
    wgmma_commit();
    const float* a = scan_filled(s, 2 * step + 1) + wg_rows;
    wgmma_fence();  // (the accumulators are the first group's, still in flight)
#pragma unroll
    for (int k = 0; k < kHeadSize; k += 8) wgmma_tf32_m64n32k8(acc, a, s.e_lo, k);
#pragma unroll
    for (int k = 0; k < kHeadSize; k += 8) wgmma_tf32_m64n32k8(acc, a, s.e, k);
    wgmma_commit();
    // While the products run: the previous step's rows counted for the correction (stored before
    // the last barrier); then the next copies, each once both warpgroups' products that read its
    // buffer are done. The loops stay unrolled: a loop between the MMAs and the wait serializes
    // them.
    if (tid == 0 && step > 0) ready_signal(space.ready(head, step + 1));  // its rows of E_{step+1}
    if (more) poll(step + 1);  // (its slot was read before the last barrier)
    wgmma_wait<1>();
    __syncthreads();  // A's remainders read
    // Two buffers: the next remainders into the remainders' buffer; three: the next map into it.
    if (tid == 0 && copy_early)
        scan_fill(space, head, 2 * step + (kScanMapBuffers == 3 ? 3 : 2), s);
    wgmma_wait<0>();
    wgmma_fence_operands(acc);  // the sums below read the products' results, not before the wait
    __syncthreads();  // both warpgroups' products done: A and E_g read
    if (kScanMapBuffers == 2 && tid == 0 && copy_early) scan_fill(space, head, 2 * step + 3, s);
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
    if (tid == 0 && !copy_early) {  // the next group's walks were not seen done: wait, then copy
      scan_group_wait(space, head, step + 2);
      fence_proxy_async_global();
      scan_fill(space, head, 2 * step + 2, s);
      scan_fill(space, head, 2 * step + 3, s);
    }
    fence_proxy_async();  // E's generic stores, before the tensor cores read them
    __syncthreads();  // E_{step+2}'s rows stored (shared and global)
    trace_scan(2 + step);
  }
  // The map pass's CTAs may still be exiting when the last step is done (its flags were set
  // before): this grid ends after that grid has completed.
  end_after_prerequisite_grid();
}

}  // namespace khk::gdn_prefill
