// The merge of the split route: per (token, head), the splits' partial results combine into the
// output and the base-2 LSE:
//   M = max m_s,  L = sum_s 2^(m_s - M) l_s,  output = sum_s 2^(m_s - M) O_s / L,  lse = M + log2 L
// with O summed in split order and L in a fixed order (the same bits on every call); a split with
// no row (l = 0) weighs 0, and a token
// with no row at all gets output 0 and LSE -inf.
//
// Two places run it:
//   - merge_splits, a second kernel, launched as a programmatic dependent of the split kernel
//     (when kMergePdl): its CTAs start while the split kernel runs and wait in
//     griddepcontrol.wait until its results are visible;
//   - merge_heads_in_grid, the split kernel's own CTAs behind a grid-wide barrier (the fused
//     launch for a few tokens, route_split_kv.cuh): no second launch, whose host-side submission
//     the GPU otherwise waits for when the split kernel is short (one token: 2.9 us of a 10.4 us
//     call on one H200 under the official timer's CUPTI tracing).
//
// Every warp weighs the splits on its own (SplitWeights): lane s loads split s's (m, l), M and L
// are warp reductions and each split's weight is shuffled from its lane, so the merge has no
// shared memory and no CTA barrier between the partials' arrival and the output. (The form
// before staged (m, l) in shared memory and looped over the splits in every thread: two barriers
// and two serial loops over the splits between the partials' arrival and the output.) The O
// quads are loaded kMergeBatch at a time, unconditionally (a select drops the empty ones, whose O
// was never written), before any is used, the first batch together with the (m, l): one round
// trip to L2 for up to kMergeBatch splits. Partials are read through L2 (ld.global.cg): in the
// grid merge other SMs wrote them during this kernel.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dsa_attention.cuh"
#include "trace.cuh"
#include "tuning.h"

namespace khk::dsa_attention {

constexpr int kMergeThreads = 64;                           // 4 columns each
constexpr int kMergeCtasPerHead = kCkvDim / (4 * kMergeThreads);
constexpr int kMergeBatch = 16;                             // O loads in flight per thread
// Splits a lane weighs: a token has at most kMaxSplits (dispatch.cu).
constexpr int kSplitsPerLane = (kMaxSplits + 31) / 32;
static_assert(32 % kMergeBatch == 0, "an O batch lies within one lane's share of the splits");

/// A read through L2 only (the host build of the tests' CTA emulator: a plain read).
template <class T>
__device__ __forceinline__ T load_through_l2(const T* p) {
#if defined(__CUDACC__)
  return __ldcg(p);
#else
  return *p;
#endif
}

__device__ __forceinline__ int64_t split_index(int64_t token, int splits, int split, int head) {
  return (token * splits + split) * kHeads + head;
}

// One (token, head)'s merge weights, in every lane of a warp: split s's weight 2^(m_s - M) (0 for
// an empty split or one past the last) lives in lane s % 32, as w[s / 32].
struct SplitWeights {
  float w[kSplitsPerLane];
  float M = -INFINITY, L = 0.0f;

  __device__ __forceinline__ void compute(const SplitPartials& p, int splits, int64_t token,
                                          int head) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    float m[kSplitsPerLane], l[kSplitsPerLane];
#pragma unroll
    for (int k = 0; k < kSplitsPerLane; ++k) {
      const int s = 32 * k + lane;
      const float2 ml = s < splits ? load_through_l2(&p.ml[split_index(token, splits, s, head)])
                                   : make_float2(-INFINITY, 0.0f);
      m[k] = ml.y > 0.0f ? ml.x : -INFINITY;
      l[k] = ml.y > 0.0f ? ml.y : 0.0f;
      M = fmaxf(M, m[k]);
    }
#pragma unroll
    for (int x = 1; x < 32; x *= 2) M = fmaxf(M, __shfl_xor_sync(~0u, M, x));
#pragma unroll
    for (int k = 0; k < kSplitsPerLane; ++k) {
      w[k] = l[k] > 0.0f ? exp2f(m[k] - M) : 0.0f;
      L += w[k] * l[k];
    }
#pragma unroll
    for (int x = 1; x < 32; x *= 2) L += __shfl_xor_sync(~0u, L, x);
  }

  /// Split 32 k + lane's weight; k a compile-time index (a run-time one puts w in local memory).
  __device__ __forceinline__ float weight(int k, int lane) const {
    return __shfl_sync(~0u, w[k], lane);
  }

  __device__ __forceinline__ float lse() const { return L > 0.0f ? M + log2f(L) : -INFINITY; }
};

// One (token, head)'s four columns at `col` over the splits, kMergeBatch splits' O in flight at a
// time; the first batch is loaded by the caller (with load()), so it can overlap other loads.
struct QuadMerge {
  float4 v[kMergeBatch];

  // Past the last split: the last one again, at weight 0.
  __device__ __forceinline__ void load(const SplitPartials& p, int splits, int64_t token, int head,
                                       int col, int first) {
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      const int split = first + b < splits ? first + b : splits - 1;
      v[b] = load_through_l2(reinterpret_cast<const float4*>(
          p.o + split_index(token, splits, split, head) * kCkvDim + col));
    }
  }

  // Writes the quad, the splits weighed by `weights` (a split past the last weighs 0).
  __device__ __forceinline__ void finish(const AttentionArgs& args, const SplitPartials& p,
                                         int splits, int64_t token, int head, int col,
                                         const SplitWeights& weights) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int k = 0; k < kSplitsPerLane; ++k)
#pragma unroll
      for (int half = 0; half < 32 / kMergeBatch; ++half) {
        const int first = 32 * k + kMergeBatch * half;
        if (first >= splits) continue;  // the same for the whole warp
        if (first > 0) load(p, splits, token, head, col, first);
#pragma unroll
        for (int b = 0; b < kMergeBatch; ++b) {
          const float w = weights.weight(k, kMergeBatch * half + b);
          acc.x += w > 0.0f ? w * v[b].x : 0.0f;
          acc.y += w > 0.0f ? w * v[b].y : 0.0f;
          acc.z += w > 0.0f ? w * v[b].z : 0.0f;
          acc.w += w > 0.0f ? w * v[b].w : 0.0f;
        }
      }
    const float inv = weights.L > 0.0f ? 1.0f / weights.L : 0.0f;
    uint2 packed;
    packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
    packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(args.output + (token * kHeads + head) * kCkvDim + col) = packed;
  }
};

/// The second kernel: one CTA per (token, head, 256 columns).
__global__ void __launch_bounds__(kMergeThreads)
    merge_splits(AttentionArgs args, SplitPartials partials, int splits) {
  const int64_t token_head = blockIdx.x / kMergeCtasPerHead;
  const int part = static_cast<int>(blockIdx.x % kMergeCtasPerHead);
  const int64_t token = token_head / kHeads;
  const int head = static_cast<int>(token_head % kHeads);
  const int col = (part * kMergeThreads + threadIdx.x) * 4;

  trace(kTraceMerge, 0);
#if defined(__CUDACC__)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the split kernel's results
#endif
  trace(kTraceMerge, 1);
  QuadMerge quad;
  quad.load(partials, splits, token, head, col, 0);
  SplitWeights weights;
  weights.compute(partials, splits, token, head);
  quad.finish(args, partials, splits, token, head, col, weights);
  if (part == 0 && threadIdx.x == 0) args.lse[token_head] = weights.lse();
  trace(kTraceMerge, 2);
}

/// Called by each of token `token`'s `splits` CTAs (split `split`, kCkvDim / 4 threads) once
/// every split's partials are visible (after a grid-wide barrier): the CTA of split s writes the
/// output and LSE of heads s, s + splits, ..., each thread one quad of columns, with one round
/// trip per head (its splits' O quads with their (m, l)) and no barrier.
__device__ __forceinline__ void merge_heads_in_grid(const AttentionArgs& args,
                                                    const SplitPartials& partials, int splits,
                                                    int64_t token, int split) {
  const int col = static_cast<int>(threadIdx.x) * 4;
  for (int head = split; head < kHeads; head += splits) {
    QuadMerge quad;
    quad.load(partials, splits, token, head, col, 0);
    SplitWeights weights;
    weights.compute(partials, splits, token, head);
    quad.finish(args, partials, splits, token, head, col, weights);
    if (threadIdx.x == 0) args.lse[token * kHeads + head] = weights.lse();
  }
}

}  // namespace khk::dsa_attention
