// Hopper's warpgroup MMA (wgmma) for the context-parallel scan: tf32 products with both operands
// in shared memory, K-major, in the no-swizzle layout of 8-row x 16-byte core matrices, and fp32
// accumulators in the registers of the four warps of a warpgroup.
//
// tf32 wgmma takes K-major operands only (no transpose as for 16-bit types), so each operand is
// stored [row][k] with K = kHeadSize: row r, key k at kmajor_offset(r, k), the next four keys one
// core matrix (128 bytes, the descriptor's LBO) on and the next eight rows 4096 bytes (SBO) on.
// An fp32 value goes in whole: the tensor cores read its upper 19 bits (a truncation to tf32).
//
// Accumulator layout (PTX ISA, "wgmma .m64nNk8 register fragment D"): warp w of the warpgroup
// holds rows 16 w + lane / 4 (+ 8), and for each 8-column tile j columns 8 j + 2 (lane % 4) (+ 1),
// as d[4 j + 0 .. 1] (row 16 w + g) and d[4 j + 2 .. 3] (row + 8): per warp, mma.sync's C layout.
//
// Compiled by a host compiler (the tests' CTA emulator), the calls go to the tests' wgmma
// emulation (tests/wgmma_on_host.h: descriptors decoded, asynchrony enforced: accumulators read
// before the wait or operands overwritten before it fail).
#pragma once

#include <cstdint>

#include "gdn_prefill.cuh"  // kHeadSize
#include "mma_tiles.cuh"    // smem_address

#if !defined(__CUDACC__)
namespace khk_host {  // tests/wgmma_on_host.cpp
uint32_t smem_offset(const void* p);
void wgmma_fence();
void wgmma_commit();
void wgmma_wait(int pending);
void wgmma_ss(float* d, int n, int type, uint64_t a, uint64_t b, bool accumulate, int scale_a,
              int scale_b, bool trans_a, bool trans_b);
}  // namespace khk_host
#endif

namespace khk::gdn_prefill {

constexpr int kWgLboBytes = 128, kWgSboBytes = 8 * kHeadSize * 4;

/// Where row r, key k of a K-major operand of kHeadSize keys lies, in floats from row 0, key 0.
__host__ __device__ constexpr int kmajor_offset(int r, int k) {
  return (r / 8) * (kWgSboBytes / 4) + (k / 4) * (kWgLboBytes / 4) + (r % 8) * 4 + k % 4;
}

/// x minus its truncation to tf32: the part the tensor cores drop, itself a tf32 to ~2^-21 |x|.
__device__ __forceinline__ float tf32_remainder(float x) {
  return x - __uint_as_float(__float_as_uint(x) & 0xffffe000u);
}

/// Waits for this thread's earlier register writes before the warpgroup's next wgmma reads them.
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDACC__)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  khk_host::wgmma_fence();
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDACC__)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  khk_host::wgmma_commit();
#endif
}
/// Waits until at most `kPending` of the warpgroup's committed wgmma groups are still running (the
/// others' accumulators written, their shared-memory operands read).
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDACC__)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#else
  khk_host::wgmma_wait(kPending);
#endif
}

/// Ties the accumulators to this point of the program. The wgmma's asm statements name them as
/// operands, but nothing ties a later plain read to the wait that makes them final, so the
/// compiler could move the read above the wait; an empty asm that reads and writes each register
/// after the wait cannot be moved above it (it is volatile, like the wait), nor the reads above it.
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N]) {
#if defined(__CUDACC__)
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
#else
  (void)d;
#endif
}

/// The no-swizzle descriptor of a K-major operand whose row 0, key 0 is at `at` (shared memory).
__device__ __forceinline__ uint64_t wgmma_descriptor(const float* at) {
#if defined(__CUDACC__)
  const uint32_t address = smem_address(at);
#else
  const uint32_t address = khk_host::smem_offset(at);
#endif
  return static_cast<uint64_t>((address & 0x3ffff) >> 4) |
         static_cast<uint64_t>(kWgLboBytes >> 4) << 16 |
         static_cast<uint64_t>(kWgSboBytes >> 4) << 32;
}

/// d (64 x 32) += a (64 x 8) b^T (8 x 32) for keys [k0, k0 + 8): a's rows from `a` (row 0 of the
/// warpgroup's 64), b's 32 rows from `b`, both K-major as above; asynchronous on the device (read
/// d only after wgmma_wait, and write neither operand before it).
__device__ __forceinline__ void wgmma_tf32_m64n32k8(float (&d)[16], const float* a, const float* b,
                                                    int k0) {
  const uint64_t da = wgmma_descriptor(a + kmajor_offset(0, k0));
  const uint64_t db = wgmma_descriptor(b + kmajor_offset(0, k0));
#if defined(__CUDACC__)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, "
      "1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "n"(1));
#else
  constexpr int kTf32 = 1;  // khk_host::kWgmmaTf32
  khk_host::wgmma_ss(d, 32, kTf32, da, db, true, 1, 1, false, false);
#endif
}

}  // namespace khk::gdn_prefill
