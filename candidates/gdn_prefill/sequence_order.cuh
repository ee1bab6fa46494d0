// The order in which a route's CTAs take the sequences: longest first. CTAs start in index order
// as SMs free up, so with more CTAs than fit at once, a long sequence left to a late CTA walks its
// chain alone at the end of the call while the other SMs idle. Handing out the sequences by
// length, longest first, is the classic longest-processing-time list schedule. The lengths live
// in cu_seqlens on the device and the host never reads them (the call stays graph-capturable),
// so every CTA ranks them itself.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gdn_prefill.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

/// Shared memory sequence_of_rank needs: the cu_seqlens of up to kRankMaxSeqs sequences, and the
/// sequence found.
constexpr int kRankScratchInt64 = kRankMaxSeqs + 2;

/// The sequence a CTA of `rank` walks, and its tokens [t_begin, t_begin + length): the sequence of
/// that rank by length, longest first (ties by index); above kRankMaxSeqs sequences (many CTAs,
/// short chains) index order. `scratch` holds kRankScratchInt64 int64 of shared memory. Every
/// thread of the CTA calls it (two CTA barriers inside); the caller may reuse `scratch` only
/// after another CTA barrier.
template <int kThreads>
__device__ __forceinline__ int64_t sequence_of_rank(const PrefillArgs& args, int64_t rank,
                                                    int64_t* scratch, int64_t& t_begin,
                                                    int64_t& length) {
  int64_t seq = rank;
  if (args.num_seqs <= kRankMaxSeqs) {
    int64_t* sCu = scratch;
    int64_t* sSeq = sCu + kRankMaxSeqs + 1;
    const int n = static_cast<int>(args.num_seqs);
    for (int i = threadIdx.x; i <= n; i += kThreads) sCu[i] = args.cu_seqlens[i];
    __syncthreads();
    for (int s = threadIdx.x; s < n; s += kThreads) {
      const int64_t len = sCu[s + 1] - sCu[s];
      int before = 0;
      int64_t start = sCu[0];
      for (int j = 0; j < n; ++j) {  // one shared load per sequence: its end is the next start
        const int64_t end = sCu[j + 1], other = end - start;
        before += other > len || (other == len && j < s);
        start = end;
      }
      if (before == rank) *sSeq = s;
    }
    __syncthreads();
    seq = *sSeq;
    t_begin = sCu[seq];
    length = sCu[seq + 1] - t_begin;
  } else {
    t_begin = args.cu_seqlens[seq];
    length = args.cu_seqlens[seq + 1] - t_begin;
  }
  return seq;
}

}  // namespace khk::gdn_prefill
