// The scan of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): per (sequence, head), E_{g+1} = E_g A_g + B_g for g = 1 .. groups - 1, from the E_1
// that group 0 wrote, each result over the B_g it consumed, the last (E_groups, the sequence's
// final state) into new_state. In fp32 FMAs, as the chain's state
// itself: a product that underflows or grows does so as the recurrence would (with bf16 hi + lo
// operands the step would add the chain's 2^-16 rounding per group on top of the chain's own).
//
// One CTA per (sequence, head, kScanRowsPerCta value rows), one thread per key column. The maps
// do not depend on the scan, so they stream through shared memory in slices of kScanSlice rows,
// kScanStages slices in flight (a whole map ahead), one CTA barrier per slice; a step's B rows
// are loaded one step ahead into registers. Each CTA counts its rows of every E_g but the last
// on the (sequence, head)'s `ready` counter, for the correction running beside it.
#pragma once

#include "mma_tiles.cuh"  // copy_16b_async, copy_commit, copy_wait
#include "small_chunk_groups.h"

namespace khk::gdn_prefill {

constexpr int kScanRowsPerCta = 8;
constexpr int kScanCtasPerHead = kHeadSize / kScanRowsPerCta;
constexpr int kScanThreadsPerCta = kHeadSize;  // one per key column
constexpr int kScanSlice = 16;                 // map rows per pipeline stage: 8 KB
constexpr int kScanStages = kHeadSize / kScanSlice;
constexpr int kScanSlicesPerMap = kHeadSize / kScanSlice;

struct SmallScanSmem {
  float a[kScanStages][kScanSlice][kHeadSize];  // slices of the maps, in a ring
  float e[2][kScanRowsPerCta][kHeadSize];       // the CTA's rows of E_g, then of E_{g+1}
};

/// Requests slice `slice` of the CTA's sequence of maps (slice / kScanSlicesPerMap is the map),
/// or nothing past the last; one commit group either way.
__device__ __forceinline__ void scan_request_slice(const SmallGroupSpace& space, int64_t head,
                                                   int slice, int slices, SmallScanSmem& s) {
  if (slice < slices) {
    const float* from = space.map(head, slice / kScanSlicesPerMap) +
                        (slice % kScanSlicesPerMap) * kScanSlice * kHeadSize;
    float* to = &s.a[slice % kScanStages][0][0];
    constexpr int kPieces = kScanSlice * kHeadSize / 4;  // 16-byte pieces
    for (int u = static_cast<int>(threadIdx.x); u < kPieces; u += kScanThreadsPerCta)
      copy_16b_async(to + 4 * u, from + 4 * u, true);
  }
  copy_commit();
}

__global__ void __launch_bounds__(kScanThreadsPerCta)
    small_cp_scan_kernel(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallScanSmem& s = *reinterpret_cast<SmallScanSmem*>(smem);
#if defined(__CUDACC__)
  // The correction may launch now (programmatic dependent launch): it waits on `ready` for each
  // group's entry state, not for this grid's end.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  const int64_t head = blockIdx.x / kScanCtasPerHead;
  const int row0 = static_cast<int>(blockIdx.x % kScanCtasPerHead) * kScanRowsPerCta;
  const int j = static_cast<int>(threadIdx.x);
  const int steps = space.groups - 1, slices = steps * kScanSlicesPerMap;

  for (int slice = 0; slice + 1 < kScanStages; ++slice)
    scan_request_slice(space, head, slice, slices, s);
  float b[kScanRowsPerCta], acc[kScanRowsPerCta];
  {
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    const float* b1 = space.exit(head, 1) + row0 * kHeadSize;
#pragma unroll
    for (int r = 0; r < kScanRowsPerCta; ++r) {
      s.e[0][r][j] = e1[r * kHeadSize + j];
      b[r] = b1[r * kHeadSize + j];
      acc[r] = 0.0f;
    }
  }
  for (int slice = 0; slice < slices; ++slice) {
    const int step = slice / kScanSlicesPerMap, part = slice % kScanSlicesPerMap;
    copy_wait<kScanStages - 2>();  // this thread's pieces of `slice` have landed
    __syncthreads();  // everyone's have, and everyone is done with slice - 1 and its E rows
    if (part == 0 && step > 0 && threadIdx.x == 0)
      ready_signal(space.ready(head));  // the previous step's E rows are written
    scan_request_slice(space, head, slice + kScanStages - 1, slices, s);
    const float(&a)[kScanSlice][kHeadSize] = s.a[slice % kScanStages];
    const float(&e)[kScanRowsPerCta][kHeadSize] = s.e[step & 1];
#pragma unroll
    for (int k = 0; k < kScanSlice; k += 4) {
      const int key = part * kScanSlice + k;
#pragma unroll
      for (int r = 0; r < kScanRowsPerCta; ++r) {
        const float4 x = *reinterpret_cast<const float4*>(&e[r][key]);
        acc[r] = fmaf(x.x, a[k][j], acc[r]);
        acc[r] = fmaf(x.y, a[k + 1][j], acc[r]);
        acc[r] = fmaf(x.z, a[k + 2][j], acc[r]);
        acc[r] = fmaf(x.w, a[k + 3][j], acc[r]);
      }
    }
    if (part + 1 == kScanSlicesPerMap) {  // E_{g+1} for g = step + 1, over B_g or the last
      const bool more = step + 1 < steps;
      float* out = (more ? space.exit(head, step + 1) : new_state + head * kStateFloats) +
                   row0 * kHeadSize;
      const float* next_b = more ? space.exit(head, step + 2) + row0 * kHeadSize : nullptr;
#pragma unroll
      for (int r = 0; r < kScanRowsPerCta; ++r) {
        const float x = acc[r] + b[r];
        s.e[(step + 1) & 1][r][j] = x;
        out[r * kHeadSize + j] = x;
        b[r] = more ? next_b[r * kHeadSize + j] : 0.0f;
        acc[r] = 0.0f;
      }
    }
  }
}

}  // namespace khk::gdn_prefill
