// The context-parallel form of the small-chunk route (route_small_chunk_cp.cuh): how a sequence
// is cut into groups, and where the groups' matrices live in the workspace.
//
// A sequence of `chunks` 16-token chunks is cut into `groups` runs of ceil(chunks / groups) whole
// chunks each (the last shorter, trailing ones empty when the sequence is short), so the longest
// sequence's groups set the time and every sequence is balanced to its own length. With
// E_g the state entering group g (E_0 the initial one) and S_out = S_in A_g + B_g group g's
// state map (M = S^T, [value row][key]), per (sequence, head):
//   exits[e], e = 0 .. groups - 2:  E_{e+1}; the map pass writes B_e there for e >= 1 (group 0
//                                   writes E_1 itself), the scan replaces it with E_{e+1}
//   maps[m],  m = 0 .. groups - 3:  A_{m+1} (group 0's map and the last group's are never needed)
#pragma once

#include <cstdint>

#include "gdn_prefill.cuh"
#include "small_chunk_layout.h"

namespace khk::gdn_prefill {

/// The matrices of a call in `groups` groups (at least 3) per sequence.
struct SmallGroupSpace {
  float* workspace = nullptr;
  int groups = 0;
  int64_t num_seqs = 0;

  static constexpr int64_t floats(int64_t num_seqs, int groups) {
    return num_seqs * kVHeads * (2 * int64_t{groups} - 3) * kStateFloats;
  }
  /// E_{e+1} (or B_e before the scan) of (sequence, head) `head`.
  __host__ __device__ float* exit(int64_t head, int e) const {
    return workspace + (head * (groups - 1) + e) * int64_t{kStateFloats};
  }
  /// A_{m+1} of (sequence, head) `head`.
  __host__ __device__ float* map(int64_t head, int m) const {
    return workspace + (num_seqs * kVHeads * (groups - 1) + head * (groups - 2) + m) *
                           int64_t{kStateFloats};
  }
};

/// Tokens [from, from + count) of group g of a sequence of `length` tokens, relative to its start.
struct GroupTokens {
  int64_t from, count;
};
__host__ __device__ inline GroupTokens group_tokens(int64_t length, int groups, int g) {
  const int64_t chunks = (length + kSmallChunk - 1) / kSmallChunk;
  const int64_t span = (chunks + groups - 1) / groups * kSmallChunk;
  const int64_t from = g * span < length ? g * span : length;
  const int64_t to = (g + 1) * span < length ? (g + 1) * span : length;
  return {from, to - from};
}

}  // namespace khk::gdn_prefill
