// The second kernel of the split route: per (token, head), the splits' partial results combine
// into the output and the base-2 LSE:
//   M = max m_s,  L = sum_s 2^(m_s - M) l_s,  output = sum_s 2^(m_s - M) O_s / L,  lse = M + log2 L
// in split order (the same bits on every call); a split with no row (l = 0) weighs 0, and a token
// with no row at all gets output 0 and LSE -inf.
//
// The splits' (m, l) are staged in shared memory by all threads at once, and their O rows are
// loaded kMergeBatch at a time, unconditionally (a select drops the empty ones, whose O was never
// written), before any is used: a loop that waited on each split's (m, l) before loading its O cost
// two L2 round trips per split, about 17 us at 64 splits on one H200, and one that left the
// scheduling of its loads to the compiler still kept only two or three in flight.
//
// Launched as a programmatic dependent of the split kernel (when kMergePdl): its CTAs start while
// the split kernel runs and wait in griddepcontrol.wait until its results are visible.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dsa_attention.cuh"
#include "warp_mma.cuh"

namespace khk::dsa_attention {

constexpr int kMergeThreads = 64;                           // 4 columns each
constexpr int kMergeCtasPerHead = kCkvDim / (4 * kMergeThreads);
constexpr int kMergeMaxSplits = 256;
constexpr int kMergeBatch = 16;                             // O loads in flight per thread

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
  auto split_index = [&](int s) { return (token * splits + s) * kHeads + head; };
  // This thread's 4 columns of split 0's O; split s's lie kSplitStride float4 further.
  constexpr int kSplitStride = kHeads * kCkvDim / 4;
  const float4* o_of_split =
      reinterpret_cast<const float4*>(partials.o + split_index(0) * kCkvDim + col);
  float m_max = -INFINITY;

  // One loop, each step loading kMergeBatch splits' O (past the last split: the last one again,
  // at weight 0) before using any: written once, so the kernel's code stays a few KB (it runs
  // about once per CTA, its instructions fetched cold).
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the split kernel's results
  float L = 0.0f;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 1
  for (int first = 0; first < splits; first += kMergeBatch) {
    float4 v[kMergeBatch];
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      v[b] = o_of_split[min(first + b, splits - 1) * kSplitStride];
    }
    // The first batch of O is requested together with the (m, l) it is weighed by: one round
    // trip to L2, not two, for up to kMergeBatch splits.
    if (first == 0) {  // the same for every thread
#pragma unroll 1
      for (int s = threadIdx.x; s < splits; s += kMergeThreads) {
        const float2 ml = partials.ml[split_index(s)];
        m_of[s] = ml.y > 0.0f ? ml.x : -INFINITY;
        l_of[s] = ml.y > 0.0f ? ml.y : 0.0f;
      }
      __syncthreads();
      float M = -INFINITY;
#pragma unroll 1
      for (int s = 0; s < splits; ++s) M = fmaxf(M, m_of[s]);
#pragma unroll 1
      for (int s = threadIdx.x; s < splits; s += kMergeThreads)
        weight[s] = l_of[s] > 0.0f ? exp2f(m_of[s] - M) : 0.0f;
      __syncthreads();
#pragma unroll 1
      for (int s = 0; s < splits; ++s) L += weight[s] * l_of[s];
      m_max = M;
    }
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      // An empty split's O was never written (it may hold NaN bits): selected out, not weighed 0.
      const float w = first + b < splits ? weight[first + b] : 0.0f;
      if (w > 0.0f) {
        acc.x = fmaf(w, v[b].x, acc.x);
        acc.y = fmaf(w, v[b].y, acc.y);
        acc.z = fmaf(w, v[b].z, acc.z);
        acc.w = fmaf(w, v[b].w, acc.w);
      }
    }
  }
  const float inv = L > 0.0f ? 1.0f / L : 0.0f;
  uint2 packed;
  packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
  packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
  *reinterpret_cast<uint2*>(args.output + token_head * kCkvDim + col) = packed;
  if (part == 0 && threadIdx.x == 0)
    args.lse[token_head] = L > 0.0f ? m_max + log2f(L) : -INFINITY;
}

}  // namespace khk::dsa_attention
