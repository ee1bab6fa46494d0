// The scan of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): per (sequence, head), E_{g+1} = E_g A_g + B_g for g = 1 .. groups - 1, from the E_1
// that group 0 wrote, each result over the B_g it consumed, the last (E_groups, the sequence's
// final state) into new_state.
//
// On tensor cores: one CTA per (sequence, head, 16 value rows), four warps of 32 key columns
// each; a step is 16 x 128 x 128, E_g and A_g as bf16 hi + lo pairs (rounded), three products
// (hi hi, lo hi, hi lo) into fp32 accumulators that start at B_g, so a step adds about 2^-16 of
// relative rounding, the chain's own order (the numpy model of the route, tools/gdn_cp_model.py,
// keeps the chain's errors with a hi + lo scan; one bf16 would not).
//
// What bounds a step is the map's arrival: every CTA reads the whole 64 KB map A_g per step, and
// with 16-byte cp.async from 128 threads that took about 3.7 us a step on one H200 (kh profile and
// Nsight Compute of 2107 x 1: 26 us for 7 steps whether the step's arithmetic ran as fp32 FMAs or
// on tensor cores at 8 % of the tensor pipe; about 17 GB/s into each SM). So the maps come by
// the bulk copy engine (one 512-byte row per copy, completing on a transaction barrier), each a
// whole step ahead in a double buffer; a step is one barrier wait, 96 MMAs per warp and the
// exchange of E through shared memory.
#pragma once

#include "bulk_copy.cuh"  // barrier_*, bulk_copy_to_shared; mma_tiles.cuh: mma_bf16, split_bf16x2
#include "small_chunk_groups.h"

namespace khk::gdn_prefill {

constexpr int kScanRowsPerCta = 16;  // one m16 tile of value rows
constexpr int kScanWarps = 4;        // kHeadSize / kScanWarps key columns each
constexpr int kScanThreadsPerCta = 32 * kScanWarps;
constexpr int kScanTilesPerWarp = kHeadSize / kScanWarps / 8;  // n8 tiles
// Row stride in floats of the maps and E in shared memory: the B fragment loads of a warp (rows
// 2c, 2c + 1, columns g) fall in distinct banks (4 words apart per row); 16-byte aligned rows for
// the bulk copies.
constexpr int kScanStride = kHeadSize + 4;
constexpr uint32_t kScanRowBytes = kHeadSize * sizeof(float);

struct SmallScanSmem {
  uint64_t landed[2];                     // a[b]'s transaction barrier
  float a[2][kHeadSize][kScanStride];     // A_g and A_{g+1}
  float e[kScanRowsPerCta][kScanStride];  // the CTA's rows of E_g
};

/// Requests map `m` of the CTA's (sequence, head) into buffer m % 2 (nothing past the last); it
/// has landed when phase (m / 2) % 2 of landed[m % 2] completes. Every thread copies its rows,
/// after a CTA barrier that ended the buffer's reads.
__device__ __forceinline__ void scan_request_map(const SmallGroupSpace& space, int64_t head, int m,
                                                 int maps, SmallScanSmem& s) {
  if (m >= maps) return;
  uint64_t* landed = &s.landed[m & 1];
  if (threadIdx.x == 0) barrier_arrive_expect(landed, kHeadSize * kScanRowBytes);
  const float* from = space.map(head, m);
  fence_proxy_async();  // the buffer's earlier reads (generic proxy) before the copies into it
  for (int row = static_cast<int>(threadIdx.x); row < kHeadSize; row += kScanThreadsPerCta)
    bulk_copy_to_shared(&s.a[m & 1][row][0], from + row * kHeadSize, kScanRowBytes, landed);
}

/// Loads the warp's accumulator tiles from rows [16] x kHeadSize at `rows` (C layout).
__device__ __forceinline__ void scan_load_tiles(float (&acc)[kScanTilesPerWarp][4],
                                                const float* rows, int col0, int lane) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int nt = 0; nt < kScanTilesPerWarp; ++nt) {
    const int col = col0 + 8 * nt + 2 * c;
    const float2 top = *reinterpret_cast<const float2*>(rows + g * kHeadSize + col);
    const float2 bottom = *reinterpret_cast<const float2*>(rows + (g + 8) * kHeadSize + col);
    acc[nt][0] = top.x, acc[nt][1] = top.y, acc[nt][2] = bottom.x, acc[nt][3] = bottom.y;
  }
}

__global__ void __launch_bounds__(kScanThreadsPerCta)
    small_cp_scan_kernel(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallScanSmem& s = *reinterpret_cast<SmallScanSmem*>(smem);
  constexpr int kCtasPerHead = kHeadSize / kScanRowsPerCta;
  const int64_t head = blockIdx.x / kCtasPerHead;
  const int row0 = static_cast<int>(blockIdx.x % kCtasPerHead) * kScanRowsPerCta;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, c = lane % 4;
  const int col0 = warp * (kHeadSize / kScanWarps);
  const int steps = space.groups - 1;  // one per map A_1 .. A_{groups - 1}

  if (threadIdx.x == 0) {
    barrier_init(&s.landed[0], 1);
    barrier_init(&s.landed[1], 1);
  }
  __syncthreads();  // the barriers are initialised before any copy completes on them
  scan_request_map(space, head, 0, steps, s);
  scan_request_map(space, head, 1, steps, s);
  {  // E_1's rows
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    for (int i = static_cast<int>(threadIdx.x); i < kScanRowsPerCta * kHeadSize;
         i += kScanThreadsPerCta)
      s.e[i / kHeadSize][i % kHeadSize] = e1[i];
  }
  float acc[kScanTilesPerWarp][4];
  scan_load_tiles(acc, space.exit(head, 1) + row0 * kHeadSize, col0, lane);  // B_1

  for (int step = 0; step < steps; ++step) {
    barrier_wait(&s.landed[step & 1], (step >> 1) & 1);  // map `step` has landed
    __syncthreads();  // E_g's rows are in place
    const float(&a)[kHeadSize][kScanStride] = s.a[step & 1];
#pragma unroll
    for (int k = 0; k < kHeadSize / 16; ++k) {
      const int key = 16 * k + 2 * c;
      uint32_t ehi[4], elo[4];
      const float2 e0 = *reinterpret_cast<const float2*>(&s.e[g][key]);
      const float2 e1 = *reinterpret_cast<const float2*>(&s.e[g + 8][key]);
      const float2 e2 = *reinterpret_cast<const float2*>(&s.e[g][key + 8]);
      const float2 e3 = *reinterpret_cast<const float2*>(&s.e[g + 8][key + 8]);
      split_bf16x2(e0.x, e0.y, ehi[0], elo[0]);
      split_bf16x2(e1.x, e1.y, ehi[1], elo[1]);
      split_bf16x2(e2.x, e2.y, ehi[2], elo[2]);
      split_bf16x2(e3.x, e3.y, ehi[3], elo[3]);
#pragma unroll
      for (int nt = 0; nt < kScanTilesPerWarp; ++nt) {
        const int col = col0 + 8 * nt + g;
        uint32_t b0h, b0l, b1h, b1l;
        split_bf16x2(a[key][col], a[key + 1][col], b0h, b0l);
        split_bf16x2(a[key + 8][col], a[key + 9][col], b1h, b1l);
        mma_bf16(acc[nt], ehi, b0h, b1h);
        mma_bf16(acc[nt], elo, b0h, b1h);
        mma_bf16(acc[nt], ehi, b0l, b1l);
      }
    }
    __syncthreads();  // everyone is done with map `step` and with E_g's rows
    scan_request_map(space, head, step + 2, steps, s);
    // E_{g+1}: into shared memory for the next step and over B_g (or into new_state, the last).
    const bool more = step + 1 < steps;
    float* out = (more ? space.exit(head, step + 1) : new_state + head * kStateFloats) +
                 row0 * kHeadSize;
#pragma unroll
    for (int nt = 0; nt < kScanTilesPerWarp; ++nt) {
      const int col = col0 + 8 * nt + 2 * c;
      const float2 top = make_float2(acc[nt][0], acc[nt][1]);
      const float2 bottom = make_float2(acc[nt][2], acc[nt][3]);
      *reinterpret_cast<float2*>(&s.e[g][col]) = top;
      *reinterpret_cast<float2*>(&s.e[g + 8][col]) = bottom;
      *reinterpret_cast<float2*>(out + g * kHeadSize + col) = top;
      *reinterpret_cast<float2*>(out + (g + 8) * kHeadSize + col) = bottom;
    }
    if (more) scan_load_tiles(acc, space.exit(head, step + 2) + row0 * kHeadSize, col0, lane);
  }
}

}  // namespace khk::gdn_prefill
