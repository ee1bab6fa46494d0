// The scan of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): per (sequence, head), E_{g+1} = E_g A_g + B_g for g = 1 .. groups - 1, from the E_1
// that group 0 wrote, each result over the B_g it consumed, the last (E_groups, the sequence's
// final state) into new_state. In fp32 FMAs, as the chain's state
// itself: a product that underflows or grows does so as the recurrence would (with bf16 hi + lo
// operands the step would add the chain's 2^-16 rounding per group on top of the chain's own).
//
// One CTA per (sequence, head, kScanRowsPerCta value rows), kScanKSplit threads per key column,
// each summing its share of the keys. The maps do not depend on the scan, so they stream through
// shared memory in slices of kScanSlice rows, kScanStages slices in flight; the kScanCluster CTAs
// of a cluster hold rows of the same head and need the same maps, so CTA 0 of the cluster reads
// each slice from L2 once and multicasts it to all (sixteen CTAs each reading a whole map per
// step from L2 took about 2 us a step on one H200, bench/micro/gdn_scan.cu). A slice's buffer is
// refilled once every CTA of the cluster has arrived on CTA 0's `empty` barrier for it. A step's
// B rows are loaded one step ahead into registers.
#pragma once

#include "cluster_copy.cuh"  // multicast_copy_to_shared, barrier_arrive_remote, cluster_sync
#include "small_chunk_groups.h"

namespace khk::gdn_prefill {

constexpr int kScanRowsPerCta = 8;
constexpr int kScanKSplit = 2;                               // threads per key column
constexpr int kScanThreadsPerCta = kScanKSplit * kHeadSize;  // 256
constexpr int kScanCluster = 8;                              // CTAs sharing each map read
constexpr int kScanSlice = 32;                               // map rows per stage: 16 KB
constexpr int kScanStages = 4;
constexpr int kScanSlicesPerMap = kHeadSize / kScanSlice;
constexpr int kScanSplitRows = kScanSlice / kScanKSplit;  // a thread's rows of a slice
constexpr int kScanWarpsPerSplit = kHeadSize / 32;
constexpr uint32_t kScanSliceBytes = kScanSlice * kHeadSize * sizeof(float);
static_assert((kHeadSize / kScanRowsPerCta) % kScanCluster == 0,
              "a cluster's CTAs must hold rows of one head");

struct SmallScanSmem {
  float a[kScanStages][kScanSlice][kHeadSize];               // slices of the maps, in a ring
  float e[2][kScanRowsPerCta][kHeadSize];                    // the CTA's rows of E_g, E_{g+1}
  float partial[kScanKSplit - 1][kScanRowsPerCta][kHeadSize];  // the other splits' sums
  uint64_t full[kScanStages];   // a slice has landed (this CTA's bytes)
  uint64_t empty[kScanStages];  // CTA 0's: every CTA of the cluster is done with a slice
};

/// CTA 0 of the cluster: slice `slice` of the CTA's sequence of maps (slice / kScanSlicesPerMap
/// is the map) into every CTA of the cluster.
__device__ __forceinline__ void scan_issue_slice(const SmallGroupSpace& space, int64_t head,
                                                 int slice, SmallScanSmem& s) {
  const float* from = space.map(head, slice / kScanSlicesPerMap) +
                      (slice % kScanSlicesPerMap) * kScanSlice * kHeadSize;
  const int stage = slice % kScanStages;
  multicast_copy_to_shared(&s.a[stage][0][0], from, kScanSliceBytes, &s.full[stage],
                           (1u << kScanCluster) - 1);
}

__global__ void KHK_CLUSTER_DIMS(kScanCluster) __launch_bounds__(kScanThreadsPerCta)
    small_cp_scan_kernel(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallScanSmem& s = *reinterpret_cast<SmallScanSmem*>(smem);
  constexpr int kCtasPerHead = kHeadSize / kScanRowsPerCta;
  const int64_t head = blockIdx.x / kCtasPerHead;
  const int row0 = static_cast<int>(blockIdx.x % kCtasPerHead) * kScanRowsPerCta;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const int split = warp / kScanWarpsPerSplit;              // which rows of each slice
  const int j = (warp % kScanWarpsPerSplit) * 32 + tid % 32;  // the key column
  const int steps = space.groups - 1, slices = steps * kScanSlicesPerMap;
  const bool issuer = cluster_rank() == 0 && tid == 0;

  if (tid == 0) {
    for (int stage = 0; stage < kScanStages; ++stage) {
      barrier_init(&s.full[stage], 1);
      barrier_init(&s.empty[stage], kScanCluster);
      if (stage < slices) barrier_arrive_expect(&s.full[stage], kScanSliceBytes);
    }
  }
  float b[kScanRowsPerCta], acc[kScanRowsPerCta];
  {
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    const float* b1 = space.exit(head, 1) + row0 * kHeadSize;
    for (int u = tid; u < kScanRowsPerCta * kHeadSize; u += kScanThreadsPerCta)
      (&s.e[0][0][0])[u] = e1[u];
#pragma unroll
    for (int r = 0; r < kScanRowsPerCta; ++r) {
      b[r] = split == 0 ? b1[r * kHeadSize + j] : 0.0f;
      acc[r] = 0.0f;
    }
  }
  cluster_sync();  // every CTA's barriers are initialised before CTA 0 copies into it
  __syncthreads();
  if (issuer)
    for (int slice = 0; slice + 1 < kScanStages && slice < slices; ++slice)
      scan_issue_slice(space, head, slice, s);

  for (int slice = 0; slice < slices; ++slice) {
    const int step = slice / kScanSlicesPerMap, part = slice % kScanSlicesPerMap;
    const int stage = slice % kScanStages;
    if (issuer && slice + kScanStages - 1 < slices) {
      const int refill = slice + kScanStages - 1;  // into the buffer of slice - 1
      if (refill >= kScanStages)
        barrier_wait(&s.empty[refill % kScanStages], (refill / kScanStages - 1) & 1);
      scan_issue_slice(space, head, refill, s);
    }
    barrier_wait(&s.full[stage], (slice / kScanStages) & 1);
    const float(&a)[kScanSlice][kHeadSize] = s.a[stage];
    const float(&e)[kScanRowsPerCta][kHeadSize] = s.e[step & 1];
#pragma unroll
    for (int k = 0; k < kScanSplitRows; k += 4) {
      const int row = split * kScanSplitRows + k, key = part * kScanSlice + row;
#pragma unroll
      for (int r = 0; r < kScanRowsPerCta; ++r) {
        const float4 x = *reinterpret_cast<const float4*>(&e[r][key]);
        acc[r] = fmaf(x.x, a[row][j], acc[r]);
        acc[r] = fmaf(x.y, a[row + 1][j], acc[r]);
        acc[r] = fmaf(x.z, a[row + 2][j], acc[r]);
        acc[r] = fmaf(x.w, a[row + 3][j], acc[r]);
      }
    }
    if (part + 1 == kScanSlicesPerMap) {  // E_{g+1} for g = step + 1, over B_g or the last
      if (split > 0) {
#pragma unroll
        for (int r = 0; r < kScanRowsPerCta; ++r) s.partial[split - 1][r][j] = acc[r];
      }
      __syncthreads();
      if (split == 0) {
        const bool more = step + 1 < steps;
        float* out = (more ? space.exit(head, step + 1) : new_state + head * kStateFloats) +
                     row0 * kHeadSize;
        const float* next_b = more ? space.exit(head, step + 2) + row0 * kHeadSize : nullptr;
#pragma unroll
        for (int r = 0; r < kScanRowsPerCta; ++r) {
          float x = acc[r];
#pragma unroll
          for (int p = 0; p + 1 < kScanKSplit; ++p) x += s.partial[p][r][j];
          x += b[r];
          s.e[(step + 1) & 1][r][j] = x;
          out[r * kHeadSize + j] = x;
          b[r] = more ? next_b[r * kHeadSize + j] : 0.0f;
        }
      }
#pragma unroll
      for (int r = 0; r < kScanRowsPerCta; ++r) acc[r] = 0.0f;
    }
    __syncthreads();  // the slice's buffer is free here, and at a step's end E_{g+1} is whole
    if (tid == 0 && slice + kScanStages < slices) {
      barrier_arrive_expect(&s.full[stage], kScanSliceBytes);  // for slice + kScanStages
      barrier_arrive_remote(&s.empty[stage], 0);
    }
  }
}

}  // namespace khk::gdn_prefill
