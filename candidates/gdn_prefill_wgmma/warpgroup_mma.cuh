// Hopper's warpgroup MMA (wgmma) as the small-chunk chain uses it (small_chunk_chain_wgmma.cuh):
// bf16 A from registers (a warp's 16 rows as mma.m16n8k16's A fragment, so the state rows and
// Delta feed it as they feed mma.sync), B from the chunk's swizzled K and Q copy in shared memory
// (small_chunk_layout.h, SmallKqTile), fp32 accumulators in registers. The accumulator
// fragment of thread t (warp w = t / 32 % 4 of its warpgroup, lane l, g = l / 4, c = l % 4):
//   d[4 j + e] = D[16 w + g + 8 (e / 2)][8 j + 2 c + e % 2]
// which, per warp, is the layout of j m16n8 accumulator tiles: the chain's state rows m[16][4]
// are the accumulator of an m64n128 MMA as they are.
//
// Compiled by a host compiler (the tests' CTA emulator), the instructions call the khk_host
// functions of tests/wgmma_on_host.h.
#pragma once

#include <cstdint>

#include "mma_tiles.cuh"
#include "small_chunk_layout.h"

#if !defined(__CUDACC__)
namespace khk_host {  // tests/wgmma_on_host.cpp
uint32_t smem_offset(const void* p);
void wgmma_fence();
void wgmma_commit();
void wgmma_wait(int pending);
void wgmma_rs(float* d, int n, int type, const uint32_t (&a)[4], uint64_t b, bool accumulate,
              int scale_a, int scale_b, bool trans_b);
}  // namespace khk_host
#endif

namespace khk::gdn_prefill {

constexpr int kWgmmaHostBf16 = 0;  // the host emulation's operand type for bf16 (khk_host)

/// The shared address of `p`, as a matrix descriptor holds it.
__device__ __forceinline__ uint32_t wgmma_address(const void* p) {
#if defined(__CUDACC__)
  return smem_address(p);
#else
  return khk_host::smem_offset(p);
#endif
}

/// A shared-memory matrix descriptor in the 128-byte swizzle (mode 1): start address, leading and
/// stride byte offsets as the PTX ISA defines them for the operand's major-ness.
__device__ __forceinline__ uint64_t sw128_descriptor(uint32_t address, uint32_t leading,
                                                     uint32_t stride) {
  return static_cast<uint64_t>((address & 0x3ffff) >> 4) |
         static_cast<uint64_t>((leading & 0x3ffff) >> 4) << 16 |
         static_cast<uint64_t>((stride & 0x3ffff) >> 4) << 32 | uint64_t{1} << 62;
}

/// [K; Q] as the K-major B operand of key step s (keys 16 s .. 16 s + 15): N = the 32 lines
/// (8-line groups one swizzle period apart), the step 32 bytes along the line (the swizzle is
/// applied to the final address, so the chunks stay where they were stored).
__device__ __forceinline__ uint64_t kq_keys_descriptor(const SmallKqTile& t, int s) {
  const uint32_t start = wgmma_address(t.kq) + (s / 4) * kSmallKqBlockBytes + (s % 4) * 32;
  return sw128_descriptor(start, 16, kSmallSwizzleBytes);
}

/// K as the N-major B operand of the state update: N = the 128 keys (64 per column block, the
/// blocks kSmallKqBlockBytes apart), K = the 16 tokens (lines; 8-line groups a period apart).
__device__ __forceinline__ uint64_t k_tokens_descriptor(const SmallKqTile& t) {
  return sw128_descriptor(wgmma_address(t.kq), kSmallKqBlockBytes, kSmallSwizzleBytes);
}

/// Orders the warpgroup's register accesses before the MMAs that follow (their accumulators and
/// A fragments written by ordinary instructions).
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

/// Waits until every committed MMA group of the warpgroup has completed.
__device__ __forceinline__ void wgmma_wait_all() {
#if defined(__CUDACC__)
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#else
  khk_host::wgmma_wait(0);
#endif
}

/// d (+)= A B: A 64 x 16 (this warp's 16 rows in `a`), B the 16 keys of `b` for 32 lines
/// (kq_keys_descriptor). `accumulate` false: d = A B.
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], const uint32_t (&a)[4], uint64_t b,
                                                bool accumulate) {
#if defined(__CUDACC__)
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(accumulate)));
#else
  khk_host::wgmma_rs(d, 32, kWgmmaHostBf16, a, b, accumulate, 1, 1, false);
#endif
}

/// d += A B: A 64 x 16 (this warp's 16 rows x the chunk's 16 tokens in `a`), B the chunk's K,
/// N-major (k_tokens_descriptor); d the warp's state rows.
__device__ __forceinline__ void wgmma_m64n128k16_update(float (&d)[16][4], const uint32_t (&a)[4],
                                                        uint64_t b) {
#if defined(__CUDACC__)
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
        "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
        "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),
        "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),
        "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),
        "+f"(d[15][2]), "+f"(d[15][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(1));
#else
  khk_host::wgmma_rs(&d[0][0], 128, kWgmmaHostBf16, a, b, true, 1, 1, true);
#endif
}

/// Ties the accumulators to this point of the program: the compiler may neither read them before
/// an earlier wgmma_wait_all nor write them after a later MMA is issued.
template <int kN>
__device__ __forceinline__ void pin_accumulators(float (&d)[kN]) {
#if defined(__CUDACC__)
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i])::"memory");
#else
  (void)d;
#endif
}
__device__ __forceinline__ void pin_accumulators(float (&d)[16][4]) {
#if defined(__CUDACC__)
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e])::"memory");
#else
  (void)d;
#endif
}

}  // namespace khk::gdn_prefill
