// The few PTX instructions the attention tiles are built from: 16-byte asynchronous gathers into
// shared memory, ldmatrix, and the m16n8k16 bf16 tensor-core MMA (fp32 accumulate). Sixteen heads
// are exactly one MMA's M, so every fragment below is a whole head block.
//
// Compiled by a host compiler (the tests' CTA emulator, tests/cuda_on_host.h), the copies land
// when their thread waits for them and the warp collectives call the khk_host functions the tests
// define (tests/cuda_on_host.cpp), as for the GDN kernels (kernels/gdn_prefill/mma_tiles.cuh).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "dsa_attention.cuh"

#if !defined(__CUDACC__)
namespace khk_host {  // tests/cuda_on_host.cpp
void async_copy(void* dst, const void* src, int bytes);  // src null: zeros
void async_commit();
void async_wait(int pending);
void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool trans);
void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
}  // namespace khk_host
#endif

namespace khk::dsa_attention {

#if defined(__CUDACC__)
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif

/// Copies 16 bytes from global to shared memory asynchronously (L2 only: every row is read once
/// per CTA). `valid == false` writes 16 zero bytes instead and reads nothing from `src`.
__device__ __forceinline__ void gather_16b(void* dst, const void* src, bool valid) {
#if defined(__CUDACC__)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
#else
  khk_host::async_copy(dst, valid ? src : nullptr, 16);
#endif
}

__device__ __forceinline__ void gather_commit() {
#if defined(__CUDACC__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  khk_host::async_commit();
#endif
}

/// Waits until at most `kPending` of this thread's committed gather groups are still in flight.
template <int kPending>
__device__ __forceinline__ void gather_wait() {
#if defined(__CUDACC__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#else
  khk_host::async_wait(kPending);
#endif
}

/// Four 8x8 bf16 matrices from shared memory; lane i gives the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
#if defined(__CUDACC__)
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
#else
  khk_host::ldmatrix_x4(r, row, false);
#endif
}

/// Two 8x8 bf16 matrices; lanes 0-15 give the addresses (lane i: row i % 8 of matrix i / 8).
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
#if defined(__CUDACC__)
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_address(row)));
#else
  uint32_t four[4];  // lanes 16-31 give addresses too (the callers repeat lanes 0-15's pattern)
  khk_host::ldmatrix_x4(four, row, false);
  r[0] = four[0], r[1] = four[1];
#endif
}

/// The same, each matrix transposed (for a B operand stored k-major, like V's rows).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
#if defined(__CUDACC__)
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
#else
  khk_host::ldmatrix_x4(r, row, true);
#endif
}

/// d += a (16x16, row-major) * b (16x8, column-major), bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
#if defined(__CUDACC__)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  khk_host::mma_m16n8k16_bf16(d, a, b0, b1);
#endif
}

}  // namespace khk::dsa_attention
