// The merge of a token's splits, inside the split kernel: the splits of one token are one
// thread-block cluster, and once each has its unnormalised O and its (m, l) staged in its own
// shared memory they combine them through distributed shared memory,
//   M = max m_s,  L = sum_s 2^(m_s - M) l_s,  output = sum_s 2^(m_s - M) O_s / L,  lse = M + log2 L
// in split order (the same bits on every call). Split s writes the s-th slice of the token's
// 16 x 512 outputs, reading that slice from every split; split 0 writes the LSEs. A split with no
// row (l = 0) weighs 0, and a token with no row at all gets output 0 and LSE -inf.
//
// This replaced a second, merge kernel behind the split kernel: that one re-read the partials
// from L2 after a grid-wide dependency and cost 6.5-6.9 us of a call under Nsight Compute on one
// H200, against a few hundred nanoseconds for the cluster's reads of each other's shared memory.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dsa_attention.cuh"
#include "tuning.h"
#include "warp_mma.cuh"

namespace khk::dsa_attention {

constexpr int kOStride = kCkvDim + 4;  // floats per staged head row (the pad spreads the banks)
constexpr int kOutputQuads = kHeads * kCkvDim / 4;

/// What the merge keeps in shared memory besides the staged O ([kHeads][kOStride] floats).
struct MergeSmem {
  float2 ml[kHeads];                  // this split's (m, l) per head, read by the whole cluster
  float2 all_ml[kMaxSplits][kHeads];  // every split's, fetched once
  float weight[kMaxSplits][kHeads];   // 2^(m_s - M), 0 for an empty split
  float inv_l[kHeads];                // 1 / L, 0 for a token with no row
};

/// Called by every thread of every split of `token` once `staged_o` and `merge.ml` hold this
/// split's results; returns after the whole cluster is done reading this CTA's shared memory.
__device__ __forceinline__ void merge_cluster(const AttentionArgs& args, int64_t token, int splits,
                                              const float* staged_o, MergeSmem& merge) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int tid = threadIdx.x;
  cluster.sync();  // every split's results are staged and visible

  for (int i = tid; i < splits * kHeads; i += blockDim.x)
    merge.all_ml[i / kHeads][i % kHeads] = *cluster.map_shared_rank(&merge.ml[i % kHeads], i / kHeads);
  __syncthreads();
  if (tid < kHeads) {
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s)
      if (merge.all_ml[s][tid].y > 0.0f) M = fmaxf(M, merge.all_ml[s][tid].x);
    float L = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float2 ml = merge.all_ml[s][tid];
      const float w = ml.y > 0.0f ? exp2f(ml.x - M) : 0.0f;
      merge.weight[s][tid] = w;
      L += w * ml.y;
    }
    merge.inv_l[tid] = L > 0.0f ? 1.0f / L : 0.0f;
    if (rank == 0) args.lse[token * kHeads + tid] = L > 0.0f ? M + log2f(L) : -INFINITY;
  }
  __syncthreads();

  // This split's slice of the output, 4 columns per item; every split's O is loaded before any
  // is used, so the reads of the cluster's shared memory are all in flight at once. An empty
  // split staged zeros, so its weight of 0 never multiplies garbage.
  const int begin = rank * kOutputQuads / splits, end = (rank + 1) * kOutputQuads / splits;
  for (int item = begin + tid; item < end; item += blockDim.x) {
    const int head = item / (kCkvDim / 4), col = item % (kCkvDim / 4) * 4;
    float4 v[kMaxSplits];
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s)
      if (s < splits)
        v[s] = *reinterpret_cast<const float4*>(
            cluster.map_shared_rank(staged_o + head * kOStride + col, s));
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s)
      if (s < splits) {
        const float w = merge.weight[s][head];
        acc.x += w * v[s].x;
        acc.y += w * v[s].y;
        acc.z += w * v[s].z;
        acc.w += w * v[s].w;
      }
    const float inv = merge.inv_l[head];
    uint2 packed;
    packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
    packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(args.output + (token * kHeads + head) * kCkvDim + col) = packed;
  }
  cluster.sync();  // no split leaves while another still reads its shared memory
}

}  // namespace khk::dsa_attention
