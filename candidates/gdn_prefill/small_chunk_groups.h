// The context-parallel form of the small-chunk route (route_small_chunk_cp.cuh): how a sequence
// is cut into groups, and where the groups' matrices and per-token partials live in the workspace.
//
// A sequence of `chunks` 16-token chunks is cut into `groups` runs of ceil(chunks / groups) whole
// chunks each (the last shorter, trailing ones empty when the sequence is short), so the longest
// sequence's groups set the time and every sequence is balanced to its own length. With
// E_g the state entering group g (E_0 the initial one) and S_out = S_in A_g + B_g group g's
// state map (M = S^T, [value row][key]), per (sequence, head):
//   exits[e], e = 0 .. groups - 1:  exits[0] is E_1 (group 0 writes it); the map pass writes B_e
//                                   into exits[e] for e >= 1, and the scan replaces B_e with
//                                   E_{e+1} for e <= groups - 2 (E_groups goes to new_state)
//   maps[m],  m = 0 .. groups - 2:  A_{m+1} (group 0's map is never needed)
// and per token t of a group g >= 1, head h, in the output's [token][head][row] layout (fp32):
//   partial[t][h]:  the output of the walk from zero (B_g's walk, without the entry state)
//   qmap[t][h]:     A_{g,<=t} q_t scale, the query through the group's map up to and including t
// so that the output is partial + E_g qmap (the correction, route_small_chunk_cp.cuh; a bf16
// partial written into the output itself failed the tolerance where partial and correction
// cancel, in the emulation test's variants); and per (sequence, head) one counter,
// `ready`, that the map pass zeroes and the scan's CTAs count up as they finish each E_g, so that
// the correction, when launched while the scan runs, can start a group as soon as its entry state
// is whole.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gdn_prefill.cuh"
#include "small_chunk_layout.h"

namespace khk::gdn_prefill {

/// The matrices and partials of a call of `total_tokens` tokens in `groups` groups (at least 2)
/// per sequence.
struct SmallGroupSpace {
  float* workspace = nullptr;
  int groups = 0;
  int64_t num_seqs = 0;
  int64_t total_tokens = 0;

  __host__ __device__ static constexpr int64_t matrix_floats(int64_t num_seqs, int groups) {
    return num_seqs * kVHeads * (2 * int64_t{groups} - 1) * kStateFloats;
  }
  __host__ __device__ static constexpr int64_t token_floats(int64_t total_tokens) {
    return total_tokens * kVHeads * kHeadSize;
  }
  __host__ __device__ static constexpr int64_t floats(int64_t num_seqs, int groups,
                                                      int64_t total_tokens) {
    return matrix_floats(num_seqs, groups) + 2 * token_floats(total_tokens) + num_seqs * kVHeads;
  }
  /// E_{e+1} (or B_e before the scan) of (sequence, head) `head`.
  __host__ __device__ float* exit(int64_t head, int e) const {
    return workspace + (head * groups + e) * int64_t{kStateFloats};
  }
  /// A_{m+1} of (sequence, head) `head`.
  __host__ __device__ float* map(int64_t head, int m) const {
    return workspace + (num_seqs * kVHeads * groups + head * (groups - 1) + m) *
                           int64_t{kStateFloats};
  }
  /// Token 0's rows of the walks-from-zero outputs, [token][head][row] like the output.
  __host__ __device__ float* partial() const {
    return workspace + matrix_floats(num_seqs, groups);
  }
  /// Token 0's rows of the queries through the group maps, [token][head][key].
  __host__ __device__ float* qmap() const { return partial() + token_floats(total_tokens); }
  /// The counter of (sequence, head) `head`: the scan's CTAs of the head, once per entry state
  /// E_2, E_3, ... they have finished.
  __host__ __device__ int* ready(int64_t head) const {
    return reinterpret_cast<int*>(qmap() + token_floats(total_tokens)) + head;
  }
};

/// One more finished piece on a `ready` counter, after the global writes of this CTA's threads
/// (the caller has passed a CTA barrier since they wrote).
__device__ __forceinline__ void ready_signal(int* counter) {
#if defined(__CUDACC__)
  __threadfence();
  atomicAdd(counter, 1);
#else
  ++*counter;
#endif
}

/// Between two polls of a `ready` counter: the scan finishes an entry state every few
/// microseconds, and many CTAs polling one L2 line back to back slow the scan they wait for.
constexpr unsigned kReadyPollNs = 500;

/// Waits until a `ready` counter reaches `target`; a CTA barrier after it orders the CTA's later
/// reads. On the host (the tests' emulator runs the launches one after another) a counter short
/// of its target is a bug in the counting, not a wait.
__device__ __forceinline__ void ready_wait(const int* counter, int target) {
#if defined(__CUDACC__)
  for (;;) {
    int seen;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    if (seen >= target) break;
    __nanosleep(kReadyPollNs);
  }
#else
  if (*counter < target) {
    std::fprintf(stderr, "ready counter %d short of %d\n", *counter, target);
    std::abort();
  }
#endif
}

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
