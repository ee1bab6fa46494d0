// The small-chunk route in context-parallel groups (issue 11): parallelism inside long sequences.
// The plain route walks a sequence's chunks one after another, one chain step of about 1.2 us
// per 16 tokens on one H200 whatever the GPU's load, so a sequence of a few thousand tokens sets
// the time with most SMs idle. Here the sequences are cut into groups of whole chunks, the
// longer a sequence the more groups, so that every group is about as long (small_chunk_groups.h),
// and three launches follow:
//   1. the map pass, every group at once: group 0 walks from the initial state with its outputs
//      and leaves E_1; group g of 1 .. groups - 1 walks from zero with its values (B_g, its
//      outputs from zero as fp32 partials) and, in other CTAs, from the identity without values
//      (A_g, one row of the map per state row; its outputs are the queries through the map);
//   2. the scan (small_chunk_scan.cuh): E_{g+1} = E_g A_g + B_g, on tensor cores with fp32
//      sums, E_groups into new_state, in clusters of CTAs that share blocks of rows;
//   3. the correction (small_chunk_correct.cuh): groups 1 .. groups - 1 get their outputs as
//      partial + E_g qmap, one product per (sequence, head, group) on all SMs at once,
//      launched while the scan runs (tuning.h), each group waiting for its entry state.
// So the critical path is one group's walk, the scan and the last group's correction; the walks
// are the plain route's (route_small_chunk.cuh), so the arithmetic per chunk is the same; the
// state leaves fp32 only in the scan's split products (about 2^-21 relative per term).
#pragma once

#include <cuda_runtime.h>

#include "route_small_chunk.cuh"
#include "small_chunk_correct.cuh"
#include "small_chunk_groups.h"
#include "small_chunk_scan.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

/// The map pass: CTA (walk slot, h, tile) in that order, tile fastest, where the walk slots are
/// the sequences' walks one sequence after another (small_cp_map_slots, the last ones idle where
/// the sequences took fewer groups than there are slots).
template <int kRowWarps, int kProducers>
__global__ void __launch_bounds__(SmallRoles<kRowWarps, kProducers>::kThreads)
    small_cp_map_kernel(PrefillArgs args, SmallGroupSpace space) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t cta = blockIdx.x;
  const int64_t rest = cta / Roles::kTilesPerHead;
  SmallWalk walk;
  walk.h = static_cast<int>(rest % kVHeads);
  walk.row0 = static_cast<int>(cta % Roles::kTilesPerHead) * kRows;
#if defined(__CUDACC__)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the plan is whole
#endif
  const int2 slot = space.plan_walks()[rest / kVHeads];
  if (slot.x < 0) return;  // an idle slot: the whole CTA, before any barrier
  const SequenceGroups sg = space.planned(slot.x);
  const int index = slot.y;  // the walk within its sequence's
  const int64_t seq = sg.seq;
  const int groups = sg.groups;
  const int64_t head = seq * kVHeads + walk.h;
  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const int64_t length = end > begin ? end - begin : 0;
  const int group = index < groups ? index : index - (groups - 1);
  const GroupTokens tokens = group_tokens(length, groups, group);
  walk.begin = begin + tokens.from;
  walk.length = tokens.count;
  if (index == 0) {
    // The scan counts the entry states it finishes from zero (small_chunk_groups.h).
    if (walk.row0 == 0 && threadIdx.x == 0) *space.ready(head) = 0;
    // Tokens outside every sequence get zero output, as in the reference.
    if (seq == 0) small_clear_rows<kRows, kThreads>(args, 0, begin, walk.h, walk.row0);
    if (seq == args.num_seqs - 1)
      small_clear_rows<kRows, kThreads>(args, begin + length, args.total_tokens, walk.h,
                                        walk.row0);
    // An empty sequence leaves its state at zero whatever the initial one.
    if (args.state && length > 0) walk.entry = args.state + head * kStateFloats;
    walk.output = args.output + (walk.begin * kVHeads + walk.h) * kHeadSize;
    walk.exit = space.exit(sg, walk.h, 0);  // E_1 (with one group the scan copies it out)
  } else if (index < groups) {
    walk.partial = space.partial() + (walk.begin * kVHeads + walk.h) * kHeadSize;
    walk.exit = space.exit(sg, walk.h, group);  // B_group
  } else {
    walk.partial = space.qmap() + (walk.begin * kVHeads + walk.h) * kHeadSize;
    walk.exit = space.map(sg, walk.h, group);  // A_group
  }
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  if (index == 0) small_chunk_walk<kRowWarps, kProducers, true>(args, walk, s);
  else if (index < groups)
    small_chunk_walk<kRowWarps, kProducers, true, false, float>(args, walk, s);
  else small_chunk_walk<kRowWarps, kProducers, true, true, float>(args, walk, s);
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel bodies itself
/// The three launches in `slots` group slots (more than num_seqs), on a workspace of
/// SmallGroupSpace::floats(num_seqs, slots, total_tokens) floats, 16-byte aligned. Only the map
/// pass reads the state and only the scan writes new_state, after it, so an in-place call
/// (new_state == state) is safe.
template <int kRowWarps, int kProducers>
cudaError_t launch_small_chunk_cp(const PrefillArgs& args, float* workspace, int64_t slots,
                                  cudaStream_t stream) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  constexpr int bytes = sizeof(SmallSmem), scan_bytes = sizeof(SmallScanSmem);
  constexpr int correct_bytes = sizeof(SmallCorrectSmem);
  cudaError_t e = cudaFuncSetAttribute(small_cp_map_kernel<kRowWarps, kProducers>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  e = cudaFuncSetAttribute(small_cp_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           scan_bytes);
  if (e != cudaSuccess) return e;
  const SmallGroupSpace space{workspace, slots, args.num_seqs, args.total_tokens,
                              args.cu_seqlens};
  const int64_t heads = args.num_seqs * kVHeads;
  const int64_t map_ctas =
      kVHeads * small_cp_map_slots(args.num_seqs, slots) * Roles::kTilesPerHead;
  const int64_t tiles = small_correct_tiles(args.total_tokens, args.num_seqs, slots);
  const int64_t correct_ctas = kVHeads * (slots - args.num_seqs) * tiles;
  if (map_ctas > 0x7fffffff || correct_ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;
  // The plan, then the map pass launched while it runs (its CTAs wait for the plan's end).
  small_cp_plan_kernel<<<1, 32, 0, stream>>>(space);
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t map{};
  map.gridDim = dim3(static_cast<unsigned>(map_ctas));
  map.blockDim = dim3(Roles::kThreads);
  map.dynamicSmemBytes = bytes;
  map.stream = stream;
  map.attrs = &early;
  map.numAttrs = 1;
  if (e = cudaGetLastError(); e != cudaSuccess) return e;
  e = cudaLaunchKernelEx(&map, small_cp_map_kernel<kRowWarps, kProducers>, args, space);
  if (e != cudaSuccess) return e;
  small_cp_scan_kernel<<<static_cast<unsigned>(heads * kScanCtasPerHead), kScanThreadsPerCta,
                         scan_bytes, stream>>>(space, args.new_state);
  if (correct_ctas == 0) return cudaGetLastError();
  // From kSmallCpOverlapMinSeqs sequences (tuning.h) launched while the scan runs, its CTAs
  // waiting for their group's entry state on `ready`; else after it.
  cudaLaunchConfig_t correct{};
  correct.gridDim = dim3(static_cast<unsigned>(correct_ctas));
  correct.blockDim = dim3(kCorrectThreads);
  correct.dynamicSmemBytes = correct_bytes;
  correct.stream = stream;
  correct.attrs = &early;
  correct.numAttrs = args.num_seqs >= kSmallCpOverlapMinSeqs ? 1 : 0;
  if (e = cudaGetLastError(); e != cudaSuccess) return e;
  return cudaLaunchKernelEx(&correct, small_cp_correct_kernel, args, space, tiles);
}
#endif

}  // namespace khk::gdn_prefill
