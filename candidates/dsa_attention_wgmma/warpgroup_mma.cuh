// Hopper's warpgroup MMA (wgmma) as the split route uses it: m64n16k16, bf16 operands from shared
// memory in the 128-byte swizzled layout (smem_layout.cuh), fp32 accumulators in registers.
// M = 64 is a block's 64 cache rows (logits, S^T = K Q^T) or 64 of the 512 value columns
// (O^T = V^T P^T); N = 16 is the heads, so no head is padded. Both operands come from shared
// memory, so a block's MMAs are a few dozen instructions instead of hundreds of ldmatrix and
// mma.sync (the route was bound by their issue: ROOFLINE.md).
//
// The accumulator fragment of thread t of the warpgroup (warp w = t / 32, lane l):
//   d[4 j + e] = D[16 w + l / 4 + 8 (e / 2)][8 j + 2 (l % 4) + e % 2],  j = 0, 1;  e = 0..3.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace khk::dsa_attention {

/// A shared-memory matrix descriptor in the 128-byte swizzle: `address` (a shared address; the
/// swizzle atom it lies in 1024-byte aligned), `leading` and `stride` byte offsets as the PTX ISA
/// defines them for the operand's major-ness (smem_layout.cuh names them per operand).
__device__ __forceinline__ uint64_t sw128_descriptor(uint32_t address, uint32_t leading,
                                                     uint32_t stride) {
  return static_cast<uint64_t>((address & 0x3ffff) >> 4) |
         static_cast<uint64_t>((leading & 0x3ffff) >> 4) << 16 |
         static_cast<uint64_t>((stride & 0x3ffff) >> 4) << 32 | uint64_t{1} << 62;
}

/// Orders the warpgroup's register and shared-memory accesses before the MMAs that follow.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/// Waits until every committed MMA group of the warpgroup has completed.
__device__ __forceinline__ void wgmma_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

/// Ties the accumulators to this point of the program: the compiler may neither read them before
/// an earlier wgmma_wait_all nor write them after a later MMA is issued.
__device__ __forceinline__ void pin_accumulators(float (&d)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// d (+)= A B, A 64x16 and B 16x16 (N x K, K-major) from their descriptors. kTransposeA: A is
/// stored M-major (its M index contiguous), else K-major. `accumulate` false: d = A B.
template <int kTransposeA>
__device__ __forceinline__ void wgmma_m64n16k16(float (&d)[8], uint64_t a, uint64_t b,
                                                bool accumulate) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, %11, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7])
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)), "n"(kTransposeA));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

}  // namespace khk::dsa_attention
