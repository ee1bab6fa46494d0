// The context-parallel form of the small-chunk route (route_small_chunk_cp.cuh): how a sequence
// is cut into groups, and where the groups' matrices and per-token partials live in the workspace.
//
// A sequence of `chunks` 16-token chunks is cut into `groups` runs of whole chunks, each
// SMALL_CP_STAGGER chunks longer than the one before (group_tokens; equal ones at 0), so the
// longest sequence's groups set the time and every sequence is balanced to its own length. With
// E_g the state entering group g (E_0 the initial one) and S_out = S_in A_g + B_g group g's
// state map (M = S^T, [value row][key]), per (sequence, head):
//   exits[e], e = 0 .. groups - 1:  exits[0] is E_1 (group 0 writes it); the map pass writes B_e
//                                   into exits[e] for e >= 1, and the scan replaces B_e with
//                                   E_{e+1} for e <= groups - 2 (E_groups goes to new_state)
//   maps[m],  m = 0 .. groups - 2:  A_{m+1} (group 0's map is never needed), stored transposed
//                                   as the scan's wgmma operand (warpgroup_mma.cuh: A^T K-major,
//                                   element (k, n) of A at kmajor_offset(n, k)), so that the scan
//                                   copies it into shared memory as it is, by bulk copies
//   maps_lo[m]:                     the same entries' tf32 remainders (tf32_remainder)
// and per token t of a group g >= 1, head h, in the output's [token][head][row] layout (fp32):
//   partial[t][h]:  the output of the walk from zero (B_g's walk, without the entry state)
//   qmap[t][h]:     A_{g,<=t} q_t scale, the query through the group's map up to and including t
// so that the output is partial + E_g qmap (the correction, route_small_chunk_cp.cuh; a bf16
// partial written into the output itself failed the tolerance where partial and correction
// cancel, in the emulation test's variants); per (sequence, head, group g >= 2) one counter,
// `ready`, that B_g's walk zeroes and each of the scan's CTAs of the head counts up once its rows
// of E_g are stored, so that the correction, when launched while the scan runs, can start a group
// as soon as its entry state is whole (one counter per group: the scan's CTAs of a head never
// wait for each other, so on one counter summed over the groups three CTAs a step ahead would
// stand in for one a step behind, and the correction would read that CTA's rows of B_g); and
// per (sequence, head, walk of the map pass) one flag, `walk_done`, that the walk's CTA zeroes
// when it starts and sets when its rows and outputs are stored, so that the scan and the
// correction, launched while the map pass runs, take a group's matrices as soon as they are whole.
// A walk zeroes its flags with a relaxed GPU-scope store and a fence before the map pass lets its
// dependents launch (every CTA does, before griddepcontrol.launch_dependents); the readers read
// the L2 (relaxed or acquire loads), so on Hopper no reader sees a flag of an earlier call. The
// PTX model promises visibility to a dependent only at griddepcontrol.wait, which the readers
// cannot use (they run beside the map pass); a memset node before the map pass would, at a node
// per call.
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
    return num_seqs * kVHeads * (3 * int64_t{groups} - 2) * kStateFloats;
  }
  __host__ __device__ static constexpr int64_t token_floats(int64_t total_tokens) {
    return total_tokens * kVHeads * kHeadSize;
  }
  __host__ __device__ static constexpr int64_t floats(int64_t num_seqs, int groups,
                                                      int64_t total_tokens) {
    return matrix_floats(num_seqs, groups) + 2 * token_floats(total_tokens) +
           num_seqs * kVHeads * (3 * int64_t{groups} - 1);  // `ready` and `walk_done`
  }
  /// E_{e+1} (or B_e before the scan) of (sequence, head) `head`.
  __host__ __device__ float* exit(int64_t head, int e) const {
    return workspace + (head * groups + e) * int64_t{kStateFloats};
  }
  /// A_{m+1} of (sequence, head) `head`, transposed into the scan's operand layout.
  __host__ __device__ float* map(int64_t head, int m) const {
    return workspace + (num_seqs * kVHeads * groups + head * (groups - 1) + m) *
                           int64_t{kStateFloats};
  }
  /// The tf32 remainders of map(head, m), in the same layout.
  __host__ __device__ float* map_lo(int64_t head, int m) const {
    return map(head, m) + num_seqs * kVHeads * (groups - 1) * int64_t{kStateFloats};
  }
  /// Token 0's rows of the walks-from-zero outputs, [token][head][row] like the output.
  __host__ __device__ float* partial() const {
    return workspace + matrix_floats(num_seqs, groups);
  }
  /// Token 0's rows of the queries through the group maps, [token][head][key].
  __host__ __device__ float* qmap() const { return partial() + token_floats(total_tokens); }
  /// The counter of entry state E_g (g >= 2; the slots of g = 0, 1 are unused) of (sequence,
  /// head) `head`: the scan's CTAs of the head whose rows of E_g are stored.
  __host__ __device__ int* ready(int64_t head, int g) const {
    return reinterpret_cast<int*>(qmap() + token_floats(total_tokens)) + head * groups + g;
  }
  /// The flag of walk `walk` of (sequence, head) `head` (the map pass's walk index: 0 for group
  /// 0, g for B_g's walk, groups - 1 + g for A_g's): 1 once the walk's results are stored.
  __host__ __device__ int* walk_done(int64_t head, int walk) const {
    return ready(num_seqs * kVHeads, 0) + head * (2 * int64_t{groups} - 1) + walk;
  }
  /// Walk indices of group g: its walk from zero (group 0: from the entry state), and for g >= 1
  /// its walk from the identity.
  __host__ __device__ int zero_walk(int g) const { return g; }
  __host__ __device__ int identity_walk(int g) const { return groups - 1 + g; }
};

/// One more finished piece on a `ready` counter, after the global writes of this CTA's threads
/// (the caller has passed a CTA barrier since they wrote): a release at GPU scope, which carries
/// the writes the barrier ordered before it; a full fence (__threadfence) cost the scan's thread 0
/// ~0.3 us a step with the CTA waiting for it.
__device__ __forceinline__ void ready_signal(int* counter) {
#if defined(__CUDACC__)
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(counter), "r"(1) : "memory");
#else
  ++*counter;
#endif
}

/// A fence at GPU scope: after a write others must see before a signal (a zeroed flag before
/// launch_dependents).
__device__ __forceinline__ void gpu_fence() {
#if defined(__CUDACC__)
  __threadfence();
#endif
}

/// After relaxed reads that saw a signal, before the reads it guards (with them, an acquire).
__device__ __forceinline__ void acquire_fence() {
#if defined(__CUDACC__)
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
#endif
}

/// Zeroes a `ready` counter or `walk_done` flag at GPU scope (a relaxed store: the readers of the
/// next call's signals read it in the L2).
__device__ __forceinline__ void signal_clear(int* flag) {
#if defined(__CUDACC__)
  asm volatile("st.relaxed.gpu.global.s32 [%0], %1;\n" ::"l"(flag), "r"(0) : "memory");
#else
  *flag = 0;
#endif
}

/// Lets this grid's programmatic dependents launch once every CTA has executed it or exited;
/// the writes a CTA made before it are not thereby visible to them (the flags say when).
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDACC__)
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/// Called by every CTA of a programmatic dependent grid that never otherwise waits for its
/// prerequisite, as the CTA ends: the grid's last CTA blocks until the prerequisite grid has
/// completed (a no-op where the grid was launched without the attribute), so that this grid cannot
/// complete before the one it overlaps and work after the call in the stream finds the whole call
/// done. The host emulator runs the launches one after another: nothing to hold there.
__device__ __forceinline__ void end_after_prerequisite_grid() {
#if defined(__CUDACC__)
  if (blockIdx.x == gridDim.x - 1) asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/// Between two polls of a `ready` counter: the scan finishes an entry state every few
/// microseconds, and many CTAs polling one L2 line back to back slow the scan they wait for.
constexpr unsigned kReadyPollNs = 500;

/// Whether a `ready` counter or `walk_done` flag has reached `target` now: a relaxed read, which
/// does not hold the thread's later loads back while it is in flight; where it has, the caller
/// orders its later reads after it by acquire_fence before it tells the CTA.
__device__ __forceinline__ bool ready_seen(const int* counter, int target) {
#if defined(__CUDACC__)
  int seen;
  asm volatile("ld.relaxed.gpu.global.s32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
  return seen >= target;
#else
  return *counter >= target;
#endif
}

/// Waits until a `ready` counter reaches `target`; a CTA barrier after it orders the CTA's later
/// reads. On the host (the tests' emulator runs the launches one after another, so every counter
/// is at its final count) a counter other than its target is a bug: short of it, in the counting;
/// past it, in the wait, which on the GPU would pass on a part of the count's signals, in
/// whatever order their writers run.
__device__ __forceinline__ void ready_wait(const int* counter, int target) {
#if defined(__CUDACC__)
  for (;;) {
    int seen;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    if (seen >= target) break;
    __nanosleep(kReadyPollNs);
  }
#else
  if (*counter != target) {
    std::fprintf(stderr, "ready counter at %d, waited for %d\n", *counter, target);
    std::abort();
  }
#endif
}

/// Tokens [from, from + count) of group g of a sequence of `length` tokens, relative to its start.
struct GroupTokens {
  int64_t from, count;
};
/// Group k of G starts at chunk k c0 + d k (k - 1) / 2 (+ one for each of the last r groups
/// before it): c0 chunks for group 0, each next group d = SMALL_CP_STAGGER more (less where the
/// sequence is too short for all of it: c0 >= 0), and the r chunks the division leaves one each
/// to the last r groups, so that the last group is the longest.
__host__ __device__ inline GroupTokens group_tokens(int64_t length, int groups, int g) {
  const int64_t chunks = (length + kSmallChunk - 1) / kSmallChunk;
  const int64_t G = groups, steps = G * (G - 1) / 2;  // the stagger's units below the last group
  const int64_t d = kSmallCpStaggerChunks * steps <= chunks ? kSmallCpStaggerChunks
                                                             : chunks / steps;
  const int64_t c0 = (chunks - d * steps) / G, r = chunks - d * steps - c0 * G;
  const auto start = [&](int64_t k) {
    return (k * c0 + d * (k * (k - 1) / 2) + (k > G - r ? k - (G - r) : 0)) * kSmallChunk;
  };
  const int64_t s0 = start(g), s1 = start(g + 1);
  const int64_t from = s0 < length ? s0 : length, to = s1 < length ? s1 : length;
  return {from, to - from};
}

/// At least the tokens of any group of any sequence of a call of `total_tokens` (the host does not
/// know the lengths): a sequence of C chunks has its longest group last, c0 + (G - 1) d + 1 chunks
/// at most, with c0 <= C / G and d <= SMALL_CP_STAGGER.
__host__ __device__ inline int64_t longest_group_tokens(int64_t total_tokens, int groups) {
  const int64_t chunks = (total_tokens + kSmallChunk - 1) / kSmallChunk;
  const int64_t bound =
      ((chunks + groups - 1) / groups + int64_t{kSmallCpStaggerChunks} * (groups - 1) + 1) *
      kSmallChunk;
  return bound < total_tokens ? bound : total_tokens;
}

}  // namespace khk::gdn_prefill
