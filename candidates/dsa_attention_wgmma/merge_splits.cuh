// The merge of the split route: per (token, head), the splits' partial results combine into the
// output and the base-2 LSE:
//   M = max m_s,  L = sum_s 2^(m_s - M) l_s,  output = sum_s 2^(m_s - M) O_s / L,  lse = M + log2 L
// in split order (the same bits on every call); a split with no row (l = 0) weighs 0, and a token
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
// The splits' (m, l) are staged in shared memory by all threads at once, and their O quads are
// loaded kMergeBatch at a time, unconditionally (a select drops the empty ones, whose O was never
// written), before any is used: a loop that waited on each split's (m, l) before loading its O cost
// two L2 round trips per split, about 17 us at 64 splits on one H200, and one that left the
// scheduling of its loads to the compiler still kept only two or three in flight. Partials are
// read through L2 (ld.global.cg): in the grid merge other SMs wrote them during this kernel.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dsa_attention.cuh"
#include "trace.cuh"
#include "warpgroup_mma.cuh"

namespace khk::dsa_attention {

constexpr int kMergeThreads = 64;                           // 4 columns each
constexpr int kMergeCtasPerHead = kCkvDim / (4 * kMergeThreads);
constexpr int kMergeMaxSplits = 256;
constexpr int kMergeBatch = 16;                             // O loads in flight per thread
constexpr int kQuadsPerHead = kCkvDim / 4;                  // a merge item: 4 columns of a head

__device__ __forceinline__ int64_t split_index(int64_t token, int splits, int split, int head) {
  return (token * splits + split) * kHeads + head;
}

// One (token, head)'s four columns at `col` over the splits, kMergeBatch splits' O in flight at a
// time; the first batch is loaded by the caller (with load()), so it can overlap other loads.
struct QuadMerge {
  float4 v[kMergeBatch];

  // Past the last split: the last one again, at weight 0.
  __device__ __forceinline__ void load(const SplitPartials& p, int splits, int64_t token, int head,
                                       int col, int first) {
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      const int split = min(first + b, splits - 1);
      v[b] = __ldcg(reinterpret_cast<const float4*>(
          p.o + split_index(token, splits, split, head) * kCkvDim + col));
    }
  }

  // weight[s] = 2^(m_s - M) (0 for an empty split), L = sum_s weight[s] l_s: writes the quad.
  __device__ __forceinline__ void finish(const AttentionArgs& args, const SplitPartials& p,
                                         int splits, int64_t token, int head, int col,
                                         const float* weight, float L) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int first = 0; first < splits; first += kMergeBatch) {
      if (first > 0) load(p, splits, token, head, col, first);
#pragma unroll
      for (int b = 0; b < kMergeBatch; ++b) {
        const float w = first + b < splits ? weight[first + b] : 0.0f;
        acc.x += w > 0.0f ? w * v[b].x : 0.0f;
        acc.y += w > 0.0f ? w * v[b].y : 0.0f;
        acc.z += w > 0.0f ? w * v[b].z : 0.0f;
        acc.w += w > 0.0f ? w * v[b].w : 0.0f;
      }
    }
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    uint2 packed;
    packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
    packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(args.output + (token * kHeads + head) * kCkvDim + col) = packed;
  }
};

// (m, l) of one split as the merge weighs it: an empty split is (-inf, 0).
__device__ __forceinline__ void load_ml(const SplitPartials& p, int64_t at, float& m, float& l) {
  const float2 ml = __ldcg(&p.ml[at]);
  m = ml.y > 0.0f ? ml.x : -INFINITY;
  l = ml.y > 0.0f ? ml.y : 0.0f;
}

__device__ __forceinline__ float merged_lse(float M, float L) {
  return L > 0.0f ? M + log2f(L) : -INFINITY;
}

/// The second kernel: one CTA per (token, head, 256 columns).
__global__ void __launch_bounds__(kMergeThreads)
    merge_splits(AttentionArgs args, SplitPartials partials, int splits) {
  __shared__ float weight[kMergeMaxSplits];  // 2^(m_s - M), 0 for an empty split
  __shared__ float l_of[kMergeMaxSplits];
  __shared__ float m_of[kMergeMaxSplits];
  const int64_t token_head = blockIdx.x / kMergeCtasPerHead;
  const int part = static_cast<int>(blockIdx.x % kMergeCtasPerHead);
  const int64_t token = token_head / kHeads;
  const int head = static_cast<int>(token_head % kHeads);
  const int col = (part * kMergeThreads + threadIdx.x) * 4;
  auto at_split = [&](int s) { return (token * splits + s) * kHeads + head; };

  // Loads kMergeBatch splits' O (past the last split: the last one again, at weight 0).
  float4 v[kMergeBatch];
  auto load_batch = [&](int first) {
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      const int split = min(first + b, splits - 1);
      v[b] = *reinterpret_cast<const float4*>(partials.o + at_split(split) * kCkvDim + col);
    }
  };

  trace(kTraceMerge, 0);
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the split kernel's results
  trace(kTraceMerge, 1);
  // The first batch of O is requested together with the (m, l) it is weighed by: one round trip
  // to L2, not two, for up to kMergeBatch splits.
  load_batch(0);
  for (int s = threadIdx.x; s < splits; s += kMergeThreads) {
    const float2 ml = partials.ml[at_split(s)];
    m_of[s] = ml.y > 0.0f ? ml.x : -INFINITY;
    l_of[s] = ml.y > 0.0f ? ml.y : 0.0f;
  }
  __syncthreads();
  float M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, m_of[s]);
  for (int s = threadIdx.x; s < splits; s += kMergeThreads)
    weight[s] = l_of[s] > 0.0f ? exp2f(m_of[s] - M) : 0.0f;
  __syncthreads();

  float L = 0.0f;
  for (int s = 0; s < splits; ++s) L += weight[s] * l_of[s];
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int first = 0; first < splits; first += kMergeBatch) {
    if (first > 0) load_batch(first);
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      const float w = first + b < splits ? weight[first + b] : 0.0f;
      acc.x += w > 0.0f ? w * v[b].x : 0.0f;
      acc.y += w > 0.0f ? w * v[b].y : 0.0f;
      acc.z += w > 0.0f ? w * v[b].z : 0.0f;
      acc.w += w > 0.0f ? w * v[b].w : 0.0f;
    }
  }
  const float inv = L > 0.0f ? 1.0f / L : 0.0f;
  uint2 packed;
  packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
  packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
  *reinterpret_cast<uint2*>(args.output + token_head * kCkvDim + col) = packed;
  if (part == 0 && threadIdx.x == 0) args.lse[token_head] = L > 0.0f ? M + log2f(L) : -INFINITY;
  trace(kTraceMerge, 2);
}

/// The shared memory merge_heads_in_grid takes (floats), for `splits` splits.
__host__ __device__ constexpr int grid_merge_floats(int splits) { return 3 * splits; }

/// Called by each of token `token`'s `splits` CTAs (split `split`, kCkvDim / 4 threads) once
/// every split's partials are visible (after a grid-wide barrier): the CTA of split s writes the
/// output and LSE of heads s, s + splits, ..., each thread one quad of columns. Per head one round
/// trip (its splits' O quads with their (m, l)) and two barriers. `smem` holds
/// grid_merge_floats(splits) floats.
__device__ __forceinline__ void merge_heads_in_grid(const AttentionArgs& args,
                                                    const SplitPartials& partials, int splits,
                                                    int64_t token, int split, float* smem) {
  float* m_of = smem;
  float* l_of = m_of + splits;
  float* weight = l_of + splits;
  const int tid = threadIdx.x, col = tid * 4;
  for (int head = split; head < kHeads; head += splits) {
    QuadMerge quad;
    quad.load(partials, splits, token, head, col, 0);
    for (int s = tid; s < splits; s += blockDim.x)
      load_ml(partials, split_index(token, splits, s, head), m_of[s], l_of[s]);
    __syncthreads();
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, m_of[s]);
    for (int s = tid; s < splits; s += blockDim.x)
      weight[s] = l_of[s] > 0.0f ? exp2f(m_of[s] - M) : 0.0f;
    __syncthreads();
    float L = 0.0f;
    for (int s = 0; s < splits; ++s) L += weight[s] * l_of[s];
    quad.finish(args, partials, splits, token, head, col, weight, L);
    if (tid == 0) args.lse[token * kHeads + head] = merged_lse(M, L);
    __syncthreads();  // m_of, l_of and weight are the next head's
  }
}

}  // namespace khk::dsa_attention
