// The context-parallel form of the small-chunk route (route_small_chunk_cp.cuh): how the call's
// sequences are cut into groups, and where the groups' matrices and per-token partials live in the
// workspace.
//
// The host picks a number of group slots for the call from the two sizes it knows (total tokens and
// sequences; dispatch.cu, small_cp_slots): as many as the map pass's walks (two per group but one
// per sequence) fit on the SMs. The lengths are known only on the device, where every CTA shares
// the slots out the same way: the smallest bound on a group's chunks for which the sequences'
// groups fit the slots (SmallGroupSpace::chunk_bound), each sequence then taking as few groups as
// keep its groups within the bound, at least one. So two sequences of 5000 and 700 tokens in 8
// slots get 7 groups and 1 instead of 4 each, and the longest group -- the map pass's critical
// path -- is about the same length in every sequence. A sequence of
// `chunks` 16-token chunks in G groups is cut into runs of ceil(chunks / G) whole chunks (the last
// shorter). With E_g the state entering group g (E_0 the initial one) and S_out = S_in A_g + B_g
// group g's state map (M = S^T, [value row][key]), per (sequence, head), in the sequence's slots:
//   exits[e], e = 0 .. G - 1:  exits[0] is E_1 (group 0 writes it); the map pass writes B_e into
//                              exits[e] for e >= 1, and the scan replaces B_e with E_{e+1} for
//                              e <= G - 2 (E_G goes to new_state; with G = 1 the scan copies
//                              E_1 there)
//   maps[m],  m = 0 .. G - 2:  A_{m+1} (group 0's map is never needed)
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

/// A sequence's share of the group slots: its groups and the first of its slots (the groups of
/// the sequences before it).
struct SequenceGroups {
  int64_t seq = 0;
  int groups = 1;
  int64_t first = 0;
};

/// The matrices and partials of a call of `total_tokens` tokens in `slots` group slots (more than
/// num_seqs), and the call's cu_seqlens, from which the device shares the slots out.
struct SmallGroupSpace {
  float* workspace = nullptr;
  int64_t slots = 0;
  int64_t num_seqs = 0;
  int64_t total_tokens = 0;
  const int64_t* cu_seqlens = nullptr;

  /// The exits (one per slot) and maps (one per slot but the sequences' first).
  __host__ __device__ static constexpr int64_t matrix_floats(int64_t num_seqs, int64_t slots) {
    return kVHeads * (2 * slots - num_seqs) * kStateFloats;
  }
  __host__ __device__ static constexpr int64_t token_floats(int64_t total_tokens) {
    return total_tokens * kVHeads * kHeadSize;
  }
  /// The plan's ints (small_cp_plan_kernel): a pair per sequence, per walk slot of the map pass
  /// and per correction slot.
  __host__ __device__ static constexpr int64_t plan_ints(int64_t num_seqs, int64_t slots) {
    return 2 * (num_seqs + (2 * slots - num_seqs) + (slots - num_seqs));
  }
  __host__ __device__ static constexpr int64_t floats(int64_t num_seqs, int64_t slots,
                                                      int64_t total_tokens) {
    return matrix_floats(num_seqs, slots) + 2 * token_floats(total_tokens) + num_seqs * kVHeads +
           plan_ints(num_seqs, slots);
  }

  /// E_{e+1} (or B_e before the scan) of value head h of the sequence.
  __host__ __device__ float* exit(const SequenceGroups& sg, int h, int e) const {
    return workspace + ((sg.first + e) * kVHeads + h) * int64_t{kStateFloats};
  }
  /// A_g, g >= 1, of value head h of the sequence: the sequences' maps follow each other, one
  /// fewer than their groups each.
  __host__ __device__ float* map(const SequenceGroups& sg, int h, int g) const {
    return workspace + ((slots + sg.first - sg.seq + g - 1) * kVHeads + h) *
                           int64_t{kStateFloats};
  }
  /// Token 0's rows of the walks-from-zero outputs, [token][head][row] like the output.
  __host__ __device__ float* partial() const {
    return workspace + matrix_floats(num_seqs, slots);
  }
  /// Token 0's rows of the queries through the group maps, [token][head][key].
  __host__ __device__ float* qmap() const { return partial() + token_floats(total_tokens); }
  /// The counter of (sequence, head) `head`: the scan's CTAs of the head, once per entry state
  /// E_2, E_3, ... they have finished.
  __host__ __device__ int* ready(int64_t head) const {
    return reinterpret_cast<int*>(qmap() + token_floats(total_tokens)) + head;
  }
  /// The plan: per sequence (its first slot, its groups); per walk slot of the map pass (sequence,
  /// walk within the sequence's); per correction slot (sequence, group); sequence -1 where idle.
  __host__ __device__ int2* plan_sequences() const {
    return reinterpret_cast<int2*>(ready(num_seqs * kVHeads));
  }
  __host__ __device__ int2* plan_walks() const { return plan_sequences() + num_seqs; }
  __host__ __device__ int2* plan_corrections() const {
    return plan_walks() + (2 * slots - num_seqs);
  }
  /// Sequence `seq`'s share, from the plan.
  __host__ __device__ SequenceGroups planned(int64_t seq) const {
    const int2 share = plan_sequences()[seq];
    return {seq, share.y, share.x};
  }

  /// The 16-token chunks of sequence `seq` (0 for an empty one).
  __host__ __device__ int64_t chunks(int64_t seq) const {
    const int64_t length = cu_seqlens[seq + 1] - cu_seqlens[seq];
    return length > 0 ? (length + kSmallChunk - 1) / kSmallChunk : 0;
  }
  /// The fewest groups that keep a sequence of `chunks` chunks within `bound` chunks per group.
  __host__ __device__ static int groups_within(int64_t chunks, int64_t bound) {
    return chunks > bound ? static_cast<int>((chunks + bound - 1) / bound) : 1;
  }
  /// Whether every sequence's groups within `bound` chunks fit the slots.
  __host__ __device__ bool fits(int64_t bound) const {
    int64_t used = 0;
    for (int64_t seq = 0; seq < num_seqs; ++seq) used += groups_within(chunks(seq), bound);
    return used <= slots;
  }
  /// The smallest bound on a group's chunks for which the groups fit. Between the total's share
  /// of all the slots and its share of the slots past one per sequence (sum ceil(c / b) is below
  /// C / b + num_seqs, so b = ceil(C / (slots - num_seqs)) fits); a binary search between, after
  /// the lower end, which is the answer for one sequence.
  __host__ __device__ int64_t chunk_bound() const {
    int64_t total = 0;
    for (int64_t seq = 0; seq < num_seqs; ++seq) total += chunks(seq);
    const int64_t spare = slots - num_seqs;
    int64_t low = (total + slots - 1) / slots, high = (total + spare - 1) / spare;
    low = low > 1 ? low : 1;
    if (high <= low || fits(low)) return low;
    while (low + 1 < high) {  // low does not fit, high does
      const int64_t mid = low + (high - low) / 2;
      if (fits(mid)) high = mid;
      else low = mid;
    }
    return high;
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

/// The map pass's walks of a sequence in `groups` groups, per value head: group 0, then the B_g,
/// then the A_g.
__host__ __device__ constexpr int small_cp_map_walks(int groups) { return 2 * groups - 1; }
/// ... and of a call in `slots` group slots: one per slot and one more per slot but the
/// sequences' first.
__host__ __device__ constexpr int64_t small_cp_map_slots(int64_t num_seqs, int64_t slots) {
  return 2 * slots - num_seqs;
}

/// Writes the call's plan (SmallGroupSpace::plan_sequences) from cu_seqlens: one thread, as the
/// form is taken for a few sequences only. A kernel of its own, read by the three that follow:
/// computed in each of their CTAs (about two dozen dependent loads and 64-bit divisions), it made
/// the map pass's walk 20 % slower (its values no longer uniform to the compiler) and the
/// correction's CTAs a few microseconds longer each (one H200, 2107 x 1: 75 -> 88 us).
__global__ void small_cp_plan_kernel(SmallGroupSpace space) {
#if defined(__CUDACC__)
  // The map pass may launch now (programmatic dependent launch); it waits for this grid's end.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  if (threadIdx.x != 0) return;
  const int64_t bound = space.chunk_bound();
  int2* const sequences = space.plan_sequences();
  int2* const walks = space.plan_walks();
  int2* const corrections = space.plan_corrections();
  int64_t first = 0, walk = 0, correction = 0;
  int most = 0;
  for (int64_t seq = 0; seq < space.num_seqs; ++seq) {
    const int groups = SmallGroupSpace::groups_within(space.chunks(seq), bound);
    sequences[seq] = make_int2(static_cast<int>(first), groups);
    for (int w = 0; w < small_cp_map_walks(groups); ++w)
      walks[walk++] = make_int2(static_cast<int>(seq), w);
    first += groups;
    most = groups > most ? groups : most;
  }
  for (; walk < small_cp_map_slots(space.num_seqs, space.slots); ++walk)
    walks[walk] = make_int2(-1, 0);
  // Group-major, so that the correction's first CTAs are those whose entry states come first.
  for (int g = 1; g < most; ++g)
    for (int64_t seq = 0; seq < space.num_seqs; ++seq)
      if (sequences[seq].y > g) corrections[correction++] = make_int2(static_cast<int>(seq), g);
  for (; correction < space.slots - space.num_seqs; ++correction)
    corrections[correction] = make_int2(-1, 0);
}

}  // namespace khk::gdn_prefill
