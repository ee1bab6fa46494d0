// The PTX the chunk kernel is built from: 16-byte asynchronous copies into shared memory,
// ldmatrix, the m16n8k16 bf16 tensor-core MMA and the m16n8k8 tf32 one (fp32 accumulators both),
// and the splits of an fp32 value into two bf16 or two tf32 parts that carry ~16 and ~21 bits of
// its mantissa through those MMAs (ROOFLINE.md, "Numerics", says where each is used and why).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"): with g = lane / 4 and
// c = lane % 4, an fp32 accumulator tile C[16][8] holds C[g][2c], C[g][2c+1] (regs 0, 1) and
// C[g+8][2c], C[g+8][2c+1] (regs 2, 3); a bf16 A[16][16] holds rows g / g+8 at columns 2c, 2c+1
// (regs 0 / 1) and 2c+8, 2c+9 (regs 2 / 3); a bf16 B[16][8] holds column g at rows 2c, 2c+1 and
// 2c+8, 2c+9. Two adjacent accumulator tiles are therefore exactly one A fragment.
//
// Compiled by a host compiler (the tests' CTA emulator, tests/cuda_on_host.h), the copies land
// only when their thread waits for them (copy_wait, or an arrival on its copies), so a read that
// does not wait for them sees the poisoned shared memory, and the warp collectives call the
// khk_host functions the tests define.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if !defined(__CUDACC__)
namespace khk_host {  // tests/cuda_on_host.cpp
// cp.async as the CTA emulator defers it: a copy lands when its thread waits for it.
void async_copy(void* dst, const void* src, int bytes);  // src null: zeros
void async_commit();
void async_wait(int pending);
void async_wait_all();
void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool trans);
void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
}  // namespace khk_host
#endif

namespace khk::gdn_prefill {

#if defined(__CUDACC__)
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif

/// 16 bytes from global to shared memory, asynchronously; `valid == false` writes zeros and
/// reads nothing.
__device__ __forceinline__ void copy_16b_async(void* dst, const void* src, bool valid) {
#if defined(__CUDACC__)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
#else
  khk_host::async_copy(dst, valid ? src : nullptr, 16);
#endif
}

__device__ __forceinline__ void copy_commit() {
#if defined(__CUDACC__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  khk_host::async_commit();
#endif
}

template <int kPending>
__device__ __forceinline__ void copy_wait() {
#if defined(__CUDACC__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#else
  khk_host::async_wait(kPending);
#endif
}

/// Four 8x8 b16 matrices; lane i gives the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
#if !defined(__CUDACC__)
  khk_host::ldmatrix_x4(r, row, false);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
#endif
}

/// The same, each matrix transposed.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
#if !defined(__CUDACC__)
  khk_host::ldmatrix_x4(r, row, true);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
#endif
}

/// d += a (16x16 row-major) * b (16x8 column-major): bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
#if !defined(__CUDACC__)
  khk_host::mma_m16n8k16_bf16(d, a, b0, b1);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/// d += a (16x8 row-major) * b (8x8 column-major): tf32 in, fp32 accumulate. A holds
/// A[g][c], A[g+8][c], A[g][c+4], A[g+8][c+4]; B holds B[c][g], B[c+4][g].
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
#if !defined(__CUDACC__)
  khk_host::mma_m16n8k8_tf32(d, a, b0, b1);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

/// x = hi + lo + O(2^-16 |x|): hi and lo as packed bf16 pairs for (x0, x1).
__device__ __forceinline__ void split_bf16x2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const float2 hf = __bfloat1622float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_bf16x2(x0 - hf.x, x1 - hf.y);
}

/// Two adjacent accumulator tiles (columns 8j .. 8j + 15) as the next MMA's A fragment, split into
/// bf16 hi and lo: the accumulator-to-A reuse of the header. s0, s1 scale the first tile's column
/// pair (2c, 2c+1), s2, s3 the second's.
__device__ __forceinline__ void split_a_fragment(const float (&left)[4], const float (&right)[4],
                                                 uint32_t (&hi)[4], uint32_t (&lo)[4],
                                                 float s0 = 1.f, float s1 = 1.f, float s2 = 1.f,
                                                 float s3 = 1.f) {
  split_bf16x2(left[0] * s0, left[1] * s1, hi[0], lo[0]);
  split_bf16x2(left[2] * s0, left[3] * s1, hi[1], lo[1]);
  split_bf16x2(right[0] * s2, right[1] * s3, hi[2], lo[2]);
  split_bf16x2(right[2] * s2, right[3] * s3, hi[3], lo[3]);
}

__device__ __forceinline__ uint32_t to_tf32(float x) {
  uint32_t r;
#if defined(__CUDACC__)
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#else  // to nearest, ties away from zero, on the 13 dropped bits (finite x)
  std::memcpy(&r, &x, sizeof r);
  if ((r & 0x7f800000u) != 0x7f800000u) r = (r + 0x1000u) & 0xffffe000u;
#endif
  return r;
}

/// x = hi + lo + O(2^-21 |x|), both as tf32 operands.
__device__ __forceinline__ void split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  hi = to_tf32(x);
  lo = to_tf32(x - __uint_as_float(hi));
}

/// x as tf32 hi + lo the cheap way: hi by truncation (one AND), lo the raw fp32 remainder, whose
/// top 19 bits the tf32 MMA reads. Each product term then carries about 2^-21 relative error
/// instead of split_tf32's rounding, at a fraction of its cost (cvt.rna.tf32.f32 was a large
/// share of the context-parallel scan's step).
__device__ __forceinline__ void split_tf32_truncated(float x, uint32_t& hi, uint32_t& lo) {
  hi = __float_as_uint(x) & 0xffffe000u;
  lo = __float_as_uint(x - __uint_as_float(hi));
}

/// 1 / x from the SFU (relative error ~2^-23 for normal x).
__device__ __forceinline__ float fast_reciprocal(float x) {
#if defined(__CUDACC__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
#else
  return 1.0f / x;
#endif
}

/// 2^x from the SFU (relative error ~2^-22).
__device__ __forceinline__ float fast_exp2(float x) {
#if defined(__CUDACC__)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
#else
  return exp2f(x);
#endif
}

}  // namespace khk::gdn_prefill
