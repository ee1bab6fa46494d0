// One split's flash-decoding state and its step over a block of 64 gathered rows, on one
// warpgroup's tensor cores (warpgroup_mma.cuh, operands in smem_layout.cuh's layout):
//   1. logits S^T = K Q^T (M = the block's 64 rows, N = the 16 heads, 36 k-steps over 576 values);
//   2. a block-wide running max per head in base 2 (rows past the split's count do not exist),
//      P = 2^(S - m) rounded to bf16 into shared memory (the row sums add the rounded values, so
//      the normalisation matches what P V used), the running sums rescaled;
//   3. O^T += V^T P^T (M = 64 value columns at a time, 8 of them, N = 16 heads), over the 16-row
//      groups of the block that hold rows.
// Then store() writes the normalised output and the base-2 LSE (the token's only split) or the
// unnormalised O with (m, l) for merge_splits.cuh.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "async_copy.cuh"
#include "dsa_attention.cuh"
#include "smem_layout.cuh"
#include "warpgroup_mma.cuh"

namespace khk::dsa_attention {

constexpr int kWarps = 4;  // one warpgroup
constexpr int kThreads = kWarps * 32;
constexpr int kRowGroup = 16;  // an output MMA's k-step: the rows past a block's last group are skipped
constexpr int kStagingStride = kCkvDim + 4;  // floats: the staged O^T's heads land in distinct banks

/// Head of a thread's accumulator column i (0..3): columns 2 (lane % 4) + i % 2 of the two
/// 8-head halves, as warpgroup_mma.cuh's fragment places them (d[4 j + e]: i = 2 j + e % 2).
__device__ __forceinline__ int head_of(int i, int lane) {
  return 8 * (i / 2) + 2 * (lane % 4) + i % 2;
}

/// Cross-warp scratch of the softmax.
struct SoftmaxSmem {
  float warp_max[kWarps][kHeads];
  float warp_sum[kWarps][kHeads];
  float head_m[kHeads], head_l[kHeads];  // the final (m, l) per head, for the coalesced store
};

struct SplitAttention {
  float o[kCkvColumns][8] = {};  // O^T: value columns 64 c + 16 w + l / 4 (+ 8), heads head_of
  float m_run[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  float l_run[4] = {0.0f, 0.0f, 0.0f, 0.0f};

  /// One block: `rows`, `q` and `p` are shared addresses (p_bytes the same P generically); the
  /// block's first row is row `first` of the split's `count`; the output MMAs read `computed`
  /// rows (a multiple of kRowGroup; the gathered rows past the count up to it are zeros).
  __device__ __forceinline__ void block(uint32_t rows, uint32_t q, uint32_t p,
                                        unsigned char* p_bytes, SoftmaxSmem& sm, int first,
                                        int count, int computed, float scale_log2) {
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int g = lane / 4;
    float s[8];
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kKeyDim / 16; ++k) wgmma_m64n16k16<0>(s, logits_a(rows, k), logits_b(q, k), k > 0);
    wgmma_commit();
    wgmma_wait_all();
    pin_accumulators(s);

    // Base-2 units; a thread holds rows 16 w + g and 16 w + g + 8 of its four heads.
    float block_max[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
    for (int d = 0; d < 8; ++d) {
      const bool exists = first + 16 * warp + g + 8 * ((d % 4) / 2) < count;
      s[d] = exists ? s[d] * scale_log2 : -INFINITY;
      const int i = 2 * (d / 4) + d % 2;
      block_max[i] = fmaxf(block_max[i], s[d]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int x = 4; x < 32; x *= 2)
        block_max[i] = fmaxf(block_max[i], __shfl_xor_sync(~0u, block_max[i], x));
    if (g == 0)
#pragma unroll
      for (int i = 0; i < 4; ++i) sm.warp_max[warp][head_of(i, lane)] = block_max[i];
    __syncthreads();

    float m_new[4], alpha[4], sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      m_new[i] = m_run[i];
      for (int w = 0; w < kWarps; ++w) m_new[i] = fmaxf(m_new[i], sm.warp_max[w][head_of(i, lane)]);
      // A block holds at least one row, so m_new is finite; the guard keeps -inf - -inf out.
      if (m_new[i] == -INFINITY) m_new[i] = 0.0f;
      alpha[i] = exp2f(m_run[i] - m_new[i]);
    }
#pragma unroll
    for (int d = 0; d < 8; ++d) {
      const int i = 2 * (d / 4) + d % 2, row = 16 * warp + g + 8 * ((d % 4) / 2);
      const __nv_bfloat16 prob = __float2bfloat16_rn(exp2f(s[d] - m_new[i]));
      sum[i] += __bfloat162float(prob);
      *reinterpret_cast<__nv_bfloat16*>(p_bytes + swizzled_piece(kPBytes, head_of(i, lane), row / 8) +
                                        (row % 8) * 2) = prob;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int x = 4; x < 32; x *= 2) sum[i] += __shfl_xor_sync(~0u, sum[i], x);
    if (g == 0)
#pragma unroll
      for (int i = 0; i < 4; ++i) sm.warp_sum[warp][head_of(i, lane)] = sum[i];
    fence_async_proxy();  // P, for the output MMAs
    __syncthreads();

#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float block_sum = 0.0f;
      for (int w = 0; w < kWarps; ++w) block_sum += sm.warp_sum[w][head_of(i, lane)];
      l_run[i] = l_run[i] * alpha[i] + block_sum;
      m_run[i] = m_new[i];
    }
#pragma unroll
    for (int c = 0; c < kCkvColumns; ++c)
#pragma unroll
      for (int d = 0; d < 8; ++d) o[c][d] *= alpha[2 * (d / 4) + d % 2];
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBlockRows / kRowGroup; ++k) {
      if (k * kRowGroup >= computed) break;  // the same for the whole warpgroup
#pragma unroll
      for (int c = 0; c < kCkvColumns; ++c)
        wgmma_m64n16k16<1>(o[c], output_a(rows, c, k), output_b(p, k), true);
    }
    wgmma_commit();
    wgmma_wait_all();
#pragma unroll
    for (int c = 0; c < kCkvColumns; ++c) pin_accumulators(o[c]);
  }

  /// Writes the split's results: the normalised output and the base-2 LSE when it is the token's
  /// only split, else its O (when it has rows) and (m, l). O^T goes through `staging` (shared,
  /// 16 x kStagingStride floats, free) so that the global stores are whole 16-byte pieces of a
  /// head's row. Every thread of the CTA calls it.
  __device__ __forceinline__ void store(const AttentionArgs& args, const SplitPartials& partials,
                                        float* staging, SoftmaxSmem& sm, int64_t token,
                                        int splits, int split, int count) {
    const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
    const int g = lane / 4;
#pragma unroll
    for (int c = 0; c < kCkvColumns; ++c)
#pragma unroll
      for (int d = 0; d < 8; ++d)
        staging[head_of(2 * (d / 4) + d % 2, lane) * kStagingStride + 64 * c + 16 * warp + g +
                8 * ((d % 4) / 2)] = o[c][d];
    if (warp == 0 && g == 0)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        sm.head_m[head_of(i, lane)] = m_run[i];
        sm.head_l[head_of(i, lane)] = l_run[i];
      }
    __syncthreads();
    for (int c = tid; c < kHeads * kCkvDim / 4; c += kThreads) {
      const int head = c / (kCkvDim / 4), col = c % (kCkvDim / 4) * 4;
      const float4 v = *reinterpret_cast<const float4*>(&staging[head * kStagingStride + col]);
      if (splits == 1) {
        const float l = sm.head_l[head], inv = l > 0.0f ? 1.0f / l : 0.0f;
        uint2 packed;
        packed.x = pack_bf16x2(v.x * inv, v.y * inv);
        packed.y = pack_bf16x2(v.z * inv, v.w * inv);
        *reinterpret_cast<uint2*>(args.output + (token * kHeads + head) * kCkvDim + col) = packed;
      } else if (count > 0) {
        const int64_t part = (token * splits + split) * kHeads + head;
        *reinterpret_cast<float4*>(partials.o + part * kCkvDim + col) = v;
      }
    }
    if (tid < kHeads) {
      const float m = sm.head_m[tid], l = sm.head_l[tid];
      if (splits == 1)
        args.lse[token * kHeads + tid] = l > 0.0f ? m + log2f(l) : -INFINITY;
      else
        partials.ml[(token * splits + split) * kHeads + tid] =
            make_float2(count > 0 ? m : -INFINITY, l);
    }
  }
};

}  // namespace khk::dsa_attention
