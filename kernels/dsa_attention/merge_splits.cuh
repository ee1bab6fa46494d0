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

  // Loads kMergeBatch splits' O (past the last split: the last one again, at weight 0).
  float4 v[kMergeBatch];
  auto load_batch = [&](int first) {
#pragma unroll
    for (int b = 0; b < kMergeBatch; ++b) {
      const int split = min(first + b, splits - 1);
      v[b] = *reinterpret_cast<const float4*>(partials.o + split_index(split) * kCkvDim + col);
    }
  };

  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the split kernel's results
  // The first batch of O is requested together with the (m, l) it is weighed by: one round trip
  // to L2, not two, for up to kMergeBatch splits.
  load_batch(0);
  for (int s = threadIdx.x; s < splits; s += kMergeThreads) {
    const float2 ml = partials.ml[split_index(s)];
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
}

}  // namespace khk::dsa_attention
