// The merge of a token's splits, inside the split kernel. A token's splits are one thread-block
// cluster; split d owns the d-th slice of the token's 16 x 512 outputs (as 2048 quads of 4
// columns). When a split is done, it pushes each quad of its unnormalised O, and its (m, l) per
// head, into the owner's shared memory with st.async, which counts the bytes down on the owner's
// barrier; the owner waits for that barrier alone and then combines, in split order (the same
// bits on every call),
//   M = max m_s,  L = sum_s 2^(m_s - M) l_s,  output = sum_s 2^(m_s - M) O_s / L,  lse = M + log2 L.
// Split 0 writes the LSEs. A split with no row (l = 0) weighs 0 (it pushed zeros), and a token with
// no row at all gets output 0 and LSE -inf.
//
// History, measured on one H200 under Nsight Compute: a second, merge kernel cost 6.5-6.9 us of a
// call; a pull merge through distributed shared memory fenced by two cluster barriers still spent
// about a quarter of the split kernel in the barriers' GPU-scope fences, in waiting for the
// slowest split, and in remote loads. Pushing needs no fence. The pushed O lands where the
// owner's row ring was, so the one cluster barrier is arrived at (relaxed) once a split no longer
// reads its rows, and waited on before its first push; it also publishes the barriers'
// initialisation.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dsa_attention.cuh"
#include "tuning.h"
#include "warp_mma.cuh"

namespace khk::dsa_attention {

constexpr int kOutputQuads = kHeads * kCkvDim / 4;  // 2048
constexpr int kQuadsPerHead = kCkvDim / 4;
constexpr int kMergeLanes = 8;                      // threads per head for M and L
static_assert((kOutputQuads & (kOutputQuads - 1)) == 0);

/// Where the cluster pushes this split's slice of every split's O (in the row ring, free by then):
/// split s's quads at [s * slice_cap, ...).
constexpr size_t kMergeInputBytes = (kOutputQuads + kMaxSplits) * sizeof(float4);

/// The rest of the merge's shared memory: every split's (m, l), the weights, the slice table.
struct MergeSmem {
  float2 ml_in[kMaxSplits][kHeads];
  float2 ml_own[kHeads];                    // this split's (m, l), before it is pushed
  float weight[kMaxSplits][kHeads];         // 2^(m_s - M), 0 for an empty split
  float inv_l[kHeads];                      // 1 / L, 0 for a token with no row
  int slice_start[kMaxSplits + 1];          // slice_begin(d) for d = 0..splits
  uint64_t received;                        // counts the pushed bytes down
};

/// The first quad split d owns (d = splits: the end); a division, so it is tabulated once.
__device__ __forceinline__ int slice_begin(int d, int splits) { return d * kOutputQuads / splits; }
__device__ __forceinline__ int slice_cap(int splits) { return (kOutputQuads + splits - 1) / splits; }
/// The split that owns quad q (the largest d with slice_begin(d) <= q): a shift, kOutputQuads
/// being a power of two.
__device__ __forceinline__ int slice_owner(int q, int splits) {
  return static_cast<int>((static_cast<unsigned>(q + 1) * splits - 1) / kOutputQuads);
}

__device__ __forceinline__ uint32_t cluster_address(const void* p, int rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(smem_address(p)), "r"(rank));
  return remote;
}

__device__ __forceinline__ void push_f32x4(uint32_t remote, float a, float b, float c, float d,
                                           uint32_t remote_barrier) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::
          "r"(remote),
      "f"(a), "f"(b), "f"(c), "f"(d), "r"(remote_barrier)
      : "memory");
}

__device__ __forceinline__ void push_f32x2(uint32_t remote, float2 v, uint32_t remote_barrier) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n" ::"r"(
          remote),
      "f"(v.x), "f"(v.y), "r"(remote_barrier)
      : "memory");
}

__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

/// At the start, before the CTA's first barrier: the slice table (threads 0..splits), and on
/// thread 0 the bytes this split will receive (every split's slice of O and its (m, l)) announced
/// on `merge.received`, which it has just initialised with one arrival.
__device__ __forceinline__ void tabulate_slices(MergeSmem& merge, int splits) {
  const int d = static_cast<int>(threadIdx.x);
  if (d <= splits) merge.slice_start[d] = slice_begin(d, splits);
}

__device__ __forceinline__ void expect_merge_inputs(MergeSmem& merge, int rank, int splits) {
  const int quads = slice_begin(rank + 1, splits) - slice_begin(rank, splits);
  const uint32_t bytes = splits * (quads * sizeof(float4) + kHeads * sizeof(float2));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   smem_address(&merge.received)),
               "r"(bytes)
               : "memory");
}

/// Pushes this thread's part of the split's O: for each of the 16 accumulator tiles, lanes
/// (g, 2k) and (g, 2k + 1) swap halves so each holds a whole quad, of head g (even lane) or
/// g + 8 (odd lane). `o` is the m16n8 accumulator layout of route_split_kv.cuh.
template <int kTiles>
__device__ __forceinline__ void push_output_quads(const float (&o)[kTiles][4], int col_base,
                                                  int rank, int splits, MergeSmem& merge,
                                                  float4* o_in) {
  const int lane = threadIdx.x % 32, g = lane / 4, q4 = lane % 4;
  const bool odd = q4 % 2;
  const int head = odd ? g + 8 : g;
  const int own_base = rank * slice_cap(splits);
#pragma unroll
  for (int t = 0; t < kTiles; ++t) {
    const float send0 = odd ? o[t][0] : o[t][2], send1 = odd ? o[t][1] : o[t][3];
    const float got0 = __shfl_xor_sync(~0u, send0, 1), got1 = __shfl_xor_sync(~0u, send1, 1);
    const int col = col_base + t * 8 + (q4 / 2) * 4;
    const int q = head * kQuadsPerHead + col / 4;
    const int owner = slice_owner(q, splits);
    const int slot = own_base + (q - merge.slice_start[owner]);
    const uint32_t dst = cluster_address(&o_in[slot], owner);
    const uint32_t bar = cluster_address(&merge.received, owner);
    if (odd)
      push_f32x4(dst, got0, got1, o[t][2], o[t][3], bar);
    else
      push_f32x4(dst, o[t][0], o[t][1], got0, got1, bar);
  }
}

/// After every thread pushed its quads and `merge.ml_own` holds this split's (m, l) (a CTA
/// barrier in between): pushes the (m, l), waits for everything the cluster pushed here, and
/// writes this split's slice of the output (and, on split 0, the LSEs).
__device__ __forceinline__ void finish_merge(const AttentionArgs& args, int64_t token, int rank,
                                             int splits, MergeSmem& merge,
                                             const float4* o_in) {
  const int tid = threadIdx.x;
  for (int i = tid; i < splits * kHeads; i += blockDim.x) {
    const int owner = i / kHeads, head = i % kHeads;
    push_f32x2(cluster_address(&merge.ml_in[rank][head], owner), merge.ml_own[head],
               cluster_address(&merge.received, owner));
  }
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_address(&merge.received))
        : "memory");
  }

  // M and L per head: 8 threads per head, each over every 8th split, combined by shuffles in a
  // fixed order.
  static_assert(kHeads * kMergeLanes <= 128, "one pass of M and L");
  if (tid < kHeads * kMergeLanes) {
    const int head = tid / kMergeLanes, part = tid % kMergeLanes;
    float M = -INFINITY;
    // A split without rows pushed m = -inf; NaN inputs give NaN m or l, which propagate.
    for (int s = part; s < splits; s += kMergeLanes)
      if (merge.ml_in[s][head].x != -INFINITY) M = fmaxf(M, merge.ml_in[s][head].x);
    for (int k = 1; k < kMergeLanes; k *= 2) M = fmaxf(M, __shfl_xor_sync(~0u, M, k));
    float L = 0.0f;
    for (int s = part; s < splits; s += kMergeLanes) {
      const float2 ml = merge.ml_in[s][head];
      const float w = ml.x != -INFINITY ? exp2f(ml.x - M) : 0.0f;
      merge.weight[s][head] = w;
      L += w * ml.y;
    }
    for (int k = 1; k < kMergeLanes; k *= 2) L += __shfl_xor_sync(~0u, L, k);
    if (part == 0) {
      merge.inv_l[head] = L > 0.0f ? 1.0f / L : 0.0f;
      if (rank == 0) args.lse[token * kHeads + head] = L > 0.0f ? M + log2f(L) : -INFINITY;
    }
  }
  __syncthreads();

  const int begin = merge.slice_start[rank], end = merge.slice_start[rank + 1];
  const int cap = slice_cap(splits);
  for (int q = begin + tid; q < end; q += blockDim.x) {
    const int head = q / kQuadsPerHead, col = q % kQuadsPerHead * 4;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = 0; s < splits; ++s) {
      const float w = merge.weight[s][head];
      const float4 v = o_in[s * cap + (q - begin)];
      acc.x += w * v.x;
      acc.y += w * v.y;
      acc.z += w * v.z;
      acc.w += w * v.w;
    }
    const float inv = merge.inv_l[head];
    uint2 packed;
    packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
    packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(args.output + (token * kHeads + head) * kCkvDim + col) = packed;
  }
}

}  // namespace khk::dsa_attention
