// The context-parallel form of the small-chunk route (route_small_chunk_cp.cuh): how the call's
// groups are shared among its sequences, how a sequence is cut into its groups, and where the
// groups' matrices and per-token partials live in the workspace.
//
// The host picks the call's number of groups, `total` (it knows the total tokens, not the
// lengths); on the device every kernel shares them out the same way from cu_seqlens
// (share_groups: at SMALL_CP_BALANCE >= 1 at least two per sequence and the rest one by one to
// the sequence of the most chunks per group, so the longest sequence no longer sets the time with
// the same count as a short one; at 0 equally). A sequence of `chunks` 16-token chunks in G groups
// is cut into runs of whole chunks, each SMALL_CP_STAGGER chunks longer than the one before
// (group_tokens; equal ones at 0). With E_g the state entering group g (E_0 the initial one) and
// S_out = S_in A_g + B_g group g's state map (M = S^T, [value row][key]), per (sequence, head):
//   exits[e], e = 0 .. G - 1:  exits[0] is E_1 (group 0 writes it); the map pass writes B_e
//                              into exits[e] for e >= 1, and the scan replaces B_e with
//                              E_{e+1} for e <= G - 2 (E_G goes to new_state)
//   maps[m],  m = 0 .. G - 2:  A_{m+1} (group 0's map is never needed)
// (HeadGroups: a sequence's heads side by side, the sequences in order) and per token t of a
// group g >= 1, head h, in the output's [token][head][row] layout (fp32):
//   partial[t][h]:  the output of the walk from zero (B_g's walk, without the entry state)
//   qmap[t][h]:     A_{g,<=t} q_t scale, the query through the group's map up to and including t
// so that the output is partial + E_g qmap (the correction, route_small_chunk_cp.cuh; a bf16
// partial written into the output itself failed the tolerance where partial and correction
// cancel, in the emulation test's variants); per (sequence, head) one counter, `ready`, that the
// map pass zeroes and the scan's CTAs count up as they finish each E_g, so that the correction,
// when launched while the scan runs, can start a group as soon as its entry state is whole; and
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

/// Sequences a context-parallel call may have: its map pass has at least three walks (two groups)
/// per (sequence, head), one CTA each, within SMALL_CP_CTAS (the dispatch checks it).
/// (At most 64: the kernels keep a count per sequence.)
constexpr long long kSmallCpSeqsFit = kSmallCpCtas / (3 * kVHeads);
constexpr int kSmallCpMaxSeqs =
    kSmallCpSeqsFit < 1 ? 1 : kSmallCpSeqsFit > 64 ? 64 : static_cast<int>(kSmallCpSeqsFit);

/// The groups of the call's sequences, `total` (at least 2 per sequence) shared out
/// (SMALL_CP_BALANCE): at 0 equally (the host gives a multiple of the sequences), else two
/// each and the rest one by one to the sequence of the most chunks per group (the lowest index of
/// those tied), so that no sequence has more than the total chunks / (total - 2 (sequences - 1))
/// per group (longest_group_tokens). Every kernel of the route computes the same from cu_seqlens.
__host__ __device__ inline void share_groups(const int64_t* cu_seqlens, int64_t num_seqs,
                                             int total, int (&count)[kSmallCpMaxSeqs]) {
  const int n = static_cast<int>(num_seqs);
  int64_t chunks[kSmallCpMaxSeqs];
  for (int i = 0; i < n; ++i) {
    const int64_t length = cu_seqlens[i + 1] - cu_seqlens[i];
    chunks[i] = length > 0 ? (length + kSmallChunk - 1) / kSmallChunk : 0;
    count[i] = kSmallCpBalance ? 2 : total / n;
  }
  if (!kSmallCpBalance) return;
  for (int left = total - 2 * n; left > 0; --left) {
    int most = 0;
    for (int i = 1; i < n; ++i)
      if (chunks[i] * count[most] > chunks[most] * count[i]) most = i;
    ++count[most];
  }
}

/// A sequence's groups, and the groups of the sequences before it.
struct SeqGroups {
  int groups = 0, before = 0;
};
__host__ __device__ inline SeqGroups seq_groups(const int64_t* cu_seqlens, int64_t num_seqs,
                                                int total, int64_t seq) {
  int count[kSmallCpMaxSeqs];
  share_groups(cu_seqlens, num_seqs, total, count);
  SeqGroups sg;
  for (int i = 0; i < seq; ++i) sg.before += count[i];
  sg.groups = count[seq];
  return sg;
}

/// The part of the workspace of one (sequence, head) of G groups.
struct HeadGroups {
  float* exits = nullptr;  // G states
  float* maps = nullptr;   // G - 1 states
  int* done = nullptr;     // 2 G - 1 walk flags
  int groups = 0;
  /// E_{e+1} (or B_e before the scan).
  __host__ __device__ float* exit(int e) const { return exits + e * int64_t{kStateFloats}; }
  /// A_{m+1}.
  __host__ __device__ float* map(int m) const { return maps + m * int64_t{kStateFloats}; }
  /// The flag of walk `walk` (the map pass's walk index: 0 for group 0, g for B_g's walk,
  /// G - 1 + g for A_g's): 1 once the walk's results are stored.
  __host__ __device__ int* walk_done(int walk) const { return done + walk; }
  /// Walk indices of group g: its walk from zero (group 0: from the entry state), and for g >= 1
  /// its walk from the identity.
  __host__ __device__ int zero_walk(int g) const { return g; }
  __host__ __device__ int identity_walk(int g) const { return groups - 1 + g; }
};

/// The map pass's walks per (sequence, head) of G groups: group 0, then the B_g, then the A_g.
__host__ __device__ constexpr int small_cp_map_walks(int groups) { return 2 * groups - 1; }

/// The matrices and partials of a call of `total_tokens` tokens in `total_groups` groups.
struct SmallGroupSpace {
  float* workspace = nullptr;
  int total_groups = 0;
  int64_t num_seqs = 0;
  int64_t total_tokens = 0;
  const int64_t* cu_seqlens = nullptr;  // the call's, for share_groups

  __host__ __device__ static constexpr int64_t walks(int64_t num_seqs, int total_groups) {
    return kVHeads * (2 * int64_t{total_groups} - num_seqs);
  }
  __host__ __device__ static constexpr int64_t matrix_floats(int64_t num_seqs, int total_groups) {
    return walks(num_seqs, total_groups) * kStateFloats;  // exits and maps
  }
  __host__ __device__ static constexpr int64_t token_floats(int64_t total_tokens) {
    return total_tokens * kVHeads * kHeadSize;
  }
  __host__ __device__ static constexpr int64_t floats(int64_t num_seqs, int total_groups,
                                                      int64_t total_tokens) {
    return matrix_floats(num_seqs, total_groups) + 2 * token_floats(total_tokens) +
           num_seqs * kVHeads + walks(num_seqs, total_groups);  // `ready` and `walk_done`
  }
  /// Head h of sequence `seq`, which has sg's groups: its exits after those of the sequences
  /// before it (sg.before groups of kVHeads heads each), then its maps and flags likewise.
  __host__ __device__ HeadGroups head(int64_t seq, int h, SeqGroups sg) const {
    const int64_t G = sg.groups, before = sg.before;
    HeadGroups hg;
    hg.groups = sg.groups;
    hg.exits = workspace + (before * kVHeads + h * G) * int64_t{kStateFloats};
    hg.maps = workspace + (int64_t{total_groups} * kVHeads + (before - seq) * kVHeads +
                           h * (G - 1)) * int64_t{kStateFloats};
    hg.done = ready(num_seqs * kVHeads) + (2 * before - seq) * kVHeads + h * (2 * G - 1);
    return hg;
  }
  /// The same, sharing the groups out here.
  __host__ __device__ HeadGroups head(int64_t seq, int h) const {
    return head(seq, h, seq_groups(cu_seqlens, num_seqs, total_groups, seq));
  }
  /// Token 0's rows of the walks-from-zero outputs, [token][head][row] like the output.
  __host__ __device__ float* partial() const {
    return workspace + matrix_floats(num_seqs, total_groups);
  }
  /// Token 0's rows of the queries through the group maps, [token][head][key].
  __host__ __device__ float* qmap() const { return partial() + token_floats(total_tokens); }
  /// The counter of (sequence, head) `head` = sequence * kVHeads + h: the scan's CTAs of the
  /// head, once per entry state E_2, E_3, ... they have finished.
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
/// Group k of G starts at chunk k c0 + d k (k - 1) / 2 (+ one for each of the last r groups
/// before it): c0 chunks for group 0, each next group d = SMALL_CP_STAGGER more (less where the
/// sequence is too short for all of it: c0 >= 0, so a sequence of fewer than G + d G (G - 1) / 2
/// chunks starts with empty groups, whose walks store their entry state as their exit), and the r
/// chunks the division leaves one each to the last r groups: the last group has the most chunks.
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

/// The most groups share_groups gives one sequence of a call of `num_seqs` in `total` groups.
__host__ __device__ inline int most_seq_groups(int64_t num_seqs, int total) {
  return kSmallCpBalance ? total - 2 * static_cast<int>(num_seqs - 1)
                         : total / static_cast<int>(num_seqs);
}

/// At least the tokens of any group of any sequence of a call of `total_tokens` in `num_seqs`
/// sequences and `total` groups (the host does not know the lengths). A sequence of C chunks in G
/// groups has its most chunks in the last group, c0 + (G - 1) d + 1 at most with
/// c0 <= C / G - d (G - 1) / 2 and d <= SMALL_CP_STAGGER. C / G is at most the call's chunks over
/// most_seq_groups: at SMALL_CP_BALANCE 0 that is G; at 1, where s has the most chunks per group
/// at the end, every sequence t given more than two had at least (G_t - 1) of s's per group when
/// it got its last, so the chunks are at least (G_s + the sum over t != s of (G_t - 2)) of s's
/// per group, and that sum is the total less 2 (sequences - 1).
__host__ __device__ inline int64_t longest_group_tokens(int64_t total_tokens, int64_t num_seqs,
                                                        int total) {
  const int64_t chunks = (total_tokens + kSmallChunk - 1) / kSmallChunk + num_seqs - 1;
  const int64_t most = most_seq_groups(num_seqs, total);  // also the divisor
  const int64_t bound = ((chunks + most - 1) / most +
                         (int64_t{kSmallCpStaggerChunks} * (most - 1) + 1) / 2 + 1) *
                        kSmallChunk;
  return bound < total_tokens ? bound : total_tokens;
}

}  // namespace khk::gdn_prefill
