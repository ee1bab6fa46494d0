// Block groups of the split route (BLOCK_GROUPS, FUSED_BLOCK_GROUPS in tuning.h): a CTA's warps in groups of four,
// each group computing whole 64-row blocks with its own softmax state. With two groups the even
// blocks go to the first and the odd ones to the second, each on its own gather stage and named
// barrier, so a split's two blocks, which land together at the end of a DRAM-bound gather (8 tokens
// x 2048 rows on one H200: ROOFLINE.md, phase timeline), are computed at the same time instead of
// one after the other; at the end the groups fold their (m, l, O) together and each writes half of
// the results.
#pragma once

#include <cmath>

namespace khk::dsa_attention {

constexpr int kGroupWarps = 4;
constexpr int kGroupThreads = kGroupWarps * 32;

/// A barrier over the warps of block group `group` only (named barrier 1 + group; barrier 0 is
/// __syncthreads), or the whole CTA when it has one group.
template <int kGroups>
__device__ __forceinline__ void group_barrier(int group) {
  if constexpr (kGroups == 1) {
    __syncthreads();
  } else {
    asm volatile("bar.sync %0, %1;\n" ::"r"(group + 1), "n"(kGroupThreads) : "memory");
  }
}

/// Folds the two groups' unnormalised O and (m, l) together (thread `gtid` of both groups holds
/// the same heads and columns): with M = max(m0, m1), O = 2^(m0 - M) O0 + 2^(m1 - M) O1 and l
/// likewise; a group without rows (l = 0) weighs 0. Each group finishes half of the tiles (the
/// first group the first half), so both store results: a group publishes the other half of its
/// tiles and its (m, l) in `own` (shared memory it no longer reads: its gather stage) and reads
/// the other group's from `other`, each at least kTiles x 2 x kGroupThreads + 32 floats. Called by
/// every thread of the CTA; on return the thread's half of `o` and both (m, l) are combined.
template <int kTiles>
__device__ __forceinline__ void combine_block_groups(int group, int gtid, float (&o)[kTiles][4],
                                                     float (&m_run)[2], float (&l_run)[2],
                                                     float* own, const float* other) {
  constexpr int kHalf = kTiles / 2;
  static_assert(kTiles % 2 == 0);
  float* own_ml = own + kHalf * 4 * kGroupThreads;  // m of the 16 heads, then l
  const float* other_ml = other + kHalf * 4 * kGroupThreads;
  const int g = gtid % 32 / 4, q4 = gtid % 4;
  const bool first = group == 0;
  // Tiles are indexed at compile time (a run-time index would put o in local memory).
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
    if ((t < kHalf) != first)  // the other group's half
#pragma unroll
      for (int e = 0; e < 4; ++e) own[((t % kHalf) * 4 + e) * kGroupThreads + gtid] = o[t][e];
  if (gtid < 32 && q4 == 0)
    for (int i = 0; i < 2; ++i) {
      own_ml[g + 8 * i] = m_run[i];
      own_ml[16 + g + 8 * i] = l_run[i];
    }
  __syncthreads();
  float w_own[2], w_other[2];
  for (int i = 0; i < 2; ++i) {
    const float m1 = other_ml[g + 8 * i], l1 = other_ml[16 + g + 8 * i];
    const float M = fmaxf(m_run[i], m1);
    w_own[i] = l_run[i] > 0.0f ? exp2f(m_run[i] - M) : 0.0f;
    w_other[i] = l1 > 0.0f ? exp2f(m1 - M) : 0.0f;
    l_run[i] = l_run[i] * w_own[i] + l1 * w_other[i];
    m_run[i] = M;
  }
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
    if ((t < kHalf) == first)  // this group's half
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[t][e] = o[t][e] * w_own[e / 2] +
                  other[((t % kHalf) * 4 + e) * kGroupThreads + gtid] * w_other[e / 2];
}

}  // namespace khk::dsa_attention
