// The small-chunk route in context-parallel groups (issue 11): parallelism inside long sequences.
// The plain route walks a sequence's chunks one after another, one chain step of about 1.2 us
// per 16 tokens on one H200 whatever the GPU's load, so a sequence of a few thousand tokens sets
// the time with most SMs idle. Here each sequence is cut into `groups` runs of whole chunks
// (small_chunk_groups.h), and three launches follow:
//   1. the map pass, every group at once: group 0 walks from the initial state with its outputs
//      and leaves E_1; group g of 1 .. groups - 1 walks from zero with its values (B_g, its
//      outputs from zero as fp32 partials) and, in other CTAs, from the identity without values
//      (A_g, one row of the map per state row; its outputs are the queries through the map);
//   2. the scan (small_chunk_scan.cuh): E_{g+1} = E_g A_g + B_g, on warpgroup MMAs with fp32
//      sums, E_groups into new_state, each CTA owning a block of value rows; launched
//      while the map pass runs, each step waiting for its group's walks (`walk_done`), which end
//      one after another where the groups grow (SMALL_CP_STAGGER);
//   3. the correction (small_chunk_correct.cuh): groups 1 .. groups - 1 get their outputs as
//      partial + E_g qmap, one product per (sequence, head, group) on all SMs at once,
//      launched while the scan runs (tuning.h), each group waiting for its entry state.
// So the critical path is the last group's walk, the scan's last step and the last group's
// correction, where the stagger matches the scan's step, else one group's walk and the whole
// scan; the walks
// are the plain route's (route_small_chunk.cuh; decoupled where SMALL_DECOUPLED asks:
// route_small_chunk_decoupled.cuh), so the arithmetic per chunk is the same; the
// state leaves fp32 only in the scan's split products (about 2^-21 relative per term).
#pragma once

#include <cuda_runtime.h>

#include "route_small_chunk.cuh"
#include "route_small_chunk_decoupled.cuh"
#include "small_chunk_correct.cuh"
#include "small_chunk_groups.h"
#include "small_chunk_scan.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

/// The map pass's walks per (sequence, head): group 0, then the B_g, then the A_g.
__host__ __device__ constexpr int small_cp_map_walks(int groups) { return 2 * groups - 1; }

/// A map CTA's (head, walk index), from its index in the grid of heads * walks CTAs. By walk kind
/// (SMALL_CP_MAP_BY_KIND): every head's group-0 walk, then every head's B_g walks (g = 1 ..
/// groups - 1), then the A_g walks, each block head-major; else head-major, a head's walks in
/// order. The three kinds are three instantiations of the walk, and the hardware hands a grid's
/// CTAs to the two SMs of a TPC in consecutive pairs: head-major with an odd number of walks per
/// head puts two kinds on one TPC, and on one H100 such pairs ended their walks 3 us later on
/// average and up to 16 us (of ~100) at 5709 x 2 than pairs of one kind (2026-12-07, the
/// timeline's map_ctas). Each kind's block has an even count (8 heads per sequence), so by kind
/// every consecutive pair is one kind.
struct MapCta {
  int64_t head;
  int index;
};
__host__ __device__ inline MapCta small_cp_map_cta(int64_t cta, int64_t heads, int groups) {
  const int walks = small_cp_map_walks(groups);
  if (!kSmallCpMapByKind) return {cta / walks, static_cast<int>(cta % walks)};
  const int per_kind = groups - 1;  // B_g (and A_g) walks per head
  if (cta < heads) return {cta, 0};
  const int64_t r = cta - heads;
  if (r < heads * per_kind) return {r / per_kind, 1 + static_cast<int>(r % per_kind)};
  const int64_t q = r - heads * per_kind;
  return {q / per_kind, groups + static_cast<int>(q % per_kind)};
}
/// Its inverse: the grid index of (head, walk index); bench/micro/gdn_cp_timeline.cu reads the
/// marks through it.
#define GDN_MAP_CTA_OF 1
__host__ __device__ inline int64_t small_cp_map_cta_of(int64_t head, int index, int64_t heads,
                                                        int groups) {
  if (!kSmallCpMapByKind) return head * small_cp_map_walks(groups) + index;
  const int per_kind = groups - 1;
  if (index == 0) return head;
  if (index < groups) return heads + head * per_kind + (index - 1);
  return heads + heads * per_kind + head * per_kind + (index - groups);
}

/// The map pass: CTA (head, walk) in the order of small_cp_map_cta.
template <int kRowWarps, int kProducers>
__global__ void __launch_bounds__(SmallRoles<kRowWarps, kProducers>::kThreads)
    small_cp_map_kernel(PrefillArgs args, SmallGroupSpace space) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  if (threadIdx.x == 0) trace(kTraceEntry);
  static_assert(Roles::kTilesPerHead == 1, "one CTA per walk: its flag is the CTA's");
  const int64_t cta = blockIdx.x;
  const MapCta who = small_cp_map_cta(cta, args.num_seqs * kVHeads, space.groups);
  const int index = who.index;
  const int64_t head = who.head;  // sequence * 8 + h
  const int64_t seq = head / kVHeads;
  SmallWalk walk;
  walk.h = static_cast<int>(head % kVHeads);
  walk.row0 = 0;  // one CTA per walk: all 128 value rows
  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const int64_t length = end > begin ? end - begin : 0;
  const int group = index < space.groups ? index : index - (space.groups - 1);
  const GroupTokens tokens = group_tokens(length, space.groups, group);
  walk.begin = begin + tokens.from;
  walk.length = tokens.count;
  if (index == 0) {
    // Tokens outside every sequence get zero output, as in the reference.
    if (seq == 0) small_clear_rows<kRows, kThreads>(args, 0, begin, walk.h, walk.row0);
    if (seq == args.num_seqs - 1)
      small_clear_rows<kRows, kThreads>(args, begin + length, args.total_tokens, walk.h,
                                        walk.row0);
    // An empty sequence leaves its state at zero whatever the initial one.
    if (args.state && length > 0) walk.entry = args.state + head * kStateFloats;
    walk.output = args.output + (walk.begin * kVHeads + walk.h) * kHeadSize;
    walk.exit = space.exit(head, 0);
  } else if (index < space.groups) {
    walk.partial = space.partial() + (walk.begin * kVHeads + walk.h) * kHeadSize;
    walk.exit = space.exit(head, index);  // B_index
  } else {
    walk.partial = space.qmap() + (walk.begin * kVHeads + walk.h) * kHeadSize;
    walk.exit = space.map(head, group - 1);  // A_group, transposed
    walk.exit_lo = space.map_lo(head, group - 1);
  }
  // This walk's flag is zeroed before the scan and the correction may launch (the dependents
  // of this grid launch once every CTA has passed launch_dependents below, after this fence).
  // B_g's walk zeroes E_g's counter too: the scan counts its CTAs' rows of E_g from zero.
  int* done = space.walk_done(head, index);
  if (threadIdx.x == 0) {
    signal_clear(done);
    if (index > 0 && index < space.groups) signal_clear(space.ready(head, index));
    gpu_fence();
  }
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  if constexpr (kSmallDecoupled && kProducers == 4) {  // route_small_chunk_decoupled.cuh
    if (index < space.groups) small_ring_start<kRowWarps, false>(s);
    else small_ring_start<kRowWarps, true>(s);
    launch_dependents();  // past the CTA barrier, so after thread 0's zero and fence
    if (index == 0) small_chunk_walk_decoupled<kRowWarps, true>(args, walk, s);
    else if (index < space.groups)
      small_chunk_walk_decoupled<kRowWarps, true, false, float>(args, walk, s);
    else small_chunk_walk_decoupled<kRowWarps, true, true, float>(args, walk, s);
  } else {
    __syncthreads();
    launch_dependents();
    if (index == 0) small_chunk_walk<kRowWarps, kProducers, true>(args, walk, s);
    else if (index < space.groups)
      small_chunk_walk<kRowWarps, kProducers, true, false, float>(args, walk, s);
    else small_chunk_walk<kRowWarps, kProducers, true, true, float>(args, walk, s);
  }
  __syncthreads();  // every warp's rows and outputs stored
  if (threadIdx.x == 0) ready_signal(done);
  if (threadIdx.x == 0) trace(kTraceItem);  // (here: the walk's flag set)
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel bodies itself
/// The three launches in `groups` (at least 2) groups per sequence, on a workspace of
/// SmallGroupSpace::floats(num_seqs, groups, total_tokens) floats, 16-byte aligned. Only group 0's
/// walk reads the state and only the scan writes new_state, which it starts only once that walk
/// is done (it waits for E_1), so an in-place call (new_state == state) is safe.
template <int kRowWarps, int kProducers>
cudaError_t launch_small_chunk_cp(const PrefillArgs& args, float* workspace, int groups,
                                  cudaStream_t stream) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  // One group has no scan step: walk_done(head, 1) would be the next head's, and new_state is
  // never written. The dispatch starts at two; a direct call must too.
  if (groups < 2) return cudaErrorInvalidValue;
  constexpr int bytes = sizeof(SmallSmem), scan_bytes = sizeof(SmallScanSmem);
  constexpr int correct_bytes =
      kCorrectSmemBytes > kSmallCorrectMinSmem ? kCorrectSmemBytes : kSmallCorrectMinSmem;
  cudaError_t e = cudaFuncSetAttribute(small_cp_map_kernel<kRowWarps, kProducers>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  e = cudaFuncSetAttribute(small_cp_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           scan_bytes);
  if (e != cudaSuccess) return e;
  e = cudaFuncSetAttribute(small_cp_correct_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           correct_bytes);
  if (e != cudaSuccess) return e;
  const SmallGroupSpace space{workspace, groups, args.num_seqs, args.total_tokens};
  const int64_t heads = args.num_seqs * kVHeads;
  const int64_t map_ctas = heads * small_cp_map_walks(groups) * Roles::kTilesPerHead;
  const int64_t tiles = small_correct_tiles(args.total_tokens, groups);
  const int64_t correct_ctas = heads * (groups - 1) * tiles;
  if (map_ctas > 0x7fffffff || correct_ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;
  small_cp_map_kernel<kRowWarps, kProducers>
      <<<static_cast<unsigned>(map_ctas), Roles::kThreads, bytes, stream>>>(args, space);
  // The scan launched while the map pass runs (SMALL_CP_SCAN_EARLY), each step waiting for its
  // group's walks.
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t scan{};
  scan.gridDim = dim3(static_cast<unsigned>(heads * kScanCtasPerHead));
  scan.blockDim = dim3(kScanThreadsPerCta);
  scan.dynamicSmemBytes = scan_bytes;
  scan.stream = stream;
  scan.attrs = &early;
  scan.numAttrs = kSmallCpScanEarly ? 1 : 0;
  if (e = cudaGetLastError(); e != cudaSuccess) return e;
  e = cudaLaunchKernelEx(&scan, small_cp_scan_kernel, space, args.new_state);
  if (e != cudaSuccess || correct_ctas == 0) return e;
  // From kSmallCpOverlapMinSeqs sequences (tuning.h) launched while the scan runs, its CTAs
  // waiting for their group's entry state on `ready`; else after it.
  cudaLaunchConfig_t correct{};
  correct.gridDim = dim3(static_cast<unsigned>(correct_ctas));
  correct.blockDim = dim3(kCorrectThreads);
  correct.dynamicSmemBytes = correct_bytes;
  correct.stream = stream;
  correct.attrs = &early;
  correct.numAttrs = args.num_seqs >= kSmallCpOverlapMinSeqs ? 1 : 0;
  return cudaLaunchKernelEx(&correct, small_cp_correct_kernel, args, space, tiles);
}
#endif

}  // namespace khk::gdn_prefill
