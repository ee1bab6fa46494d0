// The small-chunk route in context-parallel groups (issue 11): parallelism inside long sequences.
// The plain route walks a sequence's chunks one after another, one chain step of about 1.2 us
// per 16 tokens on one H200 whatever the GPU's load, so a sequence of a few thousand tokens sets
// the time with most SMs idle. Here each sequence is cut into `groups` runs of whole chunks
// (small_chunk_groups.h), and three launches follow:
//   1. the map pass, every group at once: group 0 walks from the initial state with its outputs
//      and leaves E_1; group g of 1 .. groups - 2 walks from zero with its values (B_g) and,
//      in other CTAs, from the identity without values (A_g, one row of the map per state row);
//   2. the scan (small_chunk_scan.cuh): E_{g+1} = E_g A_g + B_g, in fp32;
//   3. the finish pass: groups 1 .. groups - 1 walk again from their entry states with their
//      outputs, the last one leaving the new state.
// The chain runs twice over groups 1 .. groups - 1 and three times as many rows in the map pass,
// for a critical path of about two groups' walks and the scan instead of the whole sequence.
// The walks are the plain route's (route_small_chunk.cuh), so the arithmetic per chunk is the
// same; the state never leaves fp32 between groups.
#pragma once

#include <cuda_runtime.h>

#include "route_small_chunk.cuh"
#include "small_chunk_groups.h"
#include "small_chunk_scan.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

/// The map pass's walks per (sequence, head): group 0, then the B_g, then the A_g.
__host__ __device__ constexpr int small_cp_map_walks(int groups) { return 2 * groups - 3; }

/// The map pass: CTA (head, walk, tile) in that order, tile fastest.
template <int kRowWarps, int kProducers>
__global__ void __launch_bounds__(SmallRoles<kRowWarps, kProducers>::kThreads)
    small_cp_map_kernel(PrefillArgs args, SmallGroupSpace space) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  constexpr int kRows = Roles::kRows, kThreads = Roles::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  const int walks = small_cp_map_walks(space.groups);
  const int64_t cta = blockIdx.x;
  const int64_t rest = cta / Roles::kTilesPerHead;
  const int index = static_cast<int>(rest % walks);
  const int64_t head = rest / walks;  // sequence * 8 + h
  const int64_t seq = head / kVHeads;
  SmallWalk walk;
  walk.h = static_cast<int>(head % kVHeads);
  walk.row0 = static_cast<int>(cta % Roles::kTilesPerHead) * kRows;
  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const int64_t length = end > begin ? end - begin : 0;
  const int group = index < space.groups - 1 ? index : index - (space.groups - 2);
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
  } else if (index < space.groups - 1) {
    walk.exit = space.exit(head, index);  // B_index
  } else {
    walk.exit = space.map(head, group - 1);  // A_group
  }
  SmallSmem& s = *reinterpret_cast<SmallSmem*>(smem);
  if (index == 0) small_chunk_walk<kRowWarps, kProducers, true>(args, walk, s);
  else if (index < space.groups - 1) small_chunk_walk<kRowWarps, kProducers, false>(args, walk, s);
  else small_chunk_walk<kRowWarps, kProducers, false, true>(args, walk, s);
}

/// The finish pass: CTA (head, group 1 .. groups - 1, tile), tile fastest. It reads only the
/// workspace and writes new_state last, so an in-place call (new_state == state) is safe: only
/// the map pass read the state.
template <int kRowWarps, int kProducers>
__global__ void __launch_bounds__(SmallRoles<kRowWarps, kProducers>::kThreads)
    small_cp_finish_kernel(PrefillArgs args, SmallGroupSpace space) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t cta = blockIdx.x;
  const int64_t rest = cta / Roles::kTilesPerHead;
  const int group = 1 + static_cast<int>(rest % (space.groups - 1));
  const int64_t head = rest / (space.groups - 1);
  const int64_t seq = head / kVHeads;
  SmallWalk walk;
  walk.h = static_cast<int>(head % kVHeads);
  walk.row0 = static_cast<int>(cta % Roles::kTilesPerHead) * Roles::kRows;
  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const GroupTokens tokens = group_tokens(end > begin ? end - begin : 0, space.groups, group);
  walk.begin = begin + tokens.from;
  walk.length = tokens.count;
  walk.entry = space.exit(head, group - 1);
  walk.output = args.output + (walk.begin * kVHeads + walk.h) * kHeadSize;
  if (group == space.groups - 1) walk.exit = args.new_state + head * kStateFloats;
  small_chunk_walk<kRowWarps, kProducers>(args, walk, *reinterpret_cast<SmallSmem*>(smem));
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel bodies itself
/// The three launches in `groups` (at least 3) groups per sequence, on a workspace of
/// SmallGroupSpace::floats(num_seqs, groups) floats, 16-byte aligned.
template <int kRowWarps, int kProducers>
cudaError_t launch_small_chunk_cp(const PrefillArgs& args, float* workspace, int groups,
                                  cudaStream_t stream) {
  using Roles = SmallRoles<kRowWarps, kProducers>;
  constexpr int bytes = sizeof(SmallSmem), scan_bytes = sizeof(SmallScanSmem);
  const void* map = reinterpret_cast<const void*>(small_cp_map_kernel<kRowWarps, kProducers>);
  const void* finish = reinterpret_cast<const void*>(small_cp_finish_kernel<kRowWarps, kProducers>);
  for (const void* kernel : {map, finish}) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) return e;
  }
  const cudaError_t e = cudaFuncSetAttribute(
      small_cp_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, scan_bytes);
  if (e != cudaSuccess) return e;
  const SmallGroupSpace space{workspace, groups, args.num_seqs};
  const int64_t heads = args.num_seqs * kVHeads;
  const int64_t map_ctas = heads * small_cp_map_walks(groups) * Roles::kTilesPerHead;
  if (map_ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;
  small_cp_map_kernel<kRowWarps, kProducers>
      <<<static_cast<unsigned>(map_ctas), Roles::kThreads, bytes, stream>>>(args, space);
  small_cp_scan_kernel<<<static_cast<unsigned>(heads * (kHeadSize / kScanRowsPerCta)),
                         kScanThreadsPerCta, scan_bytes, stream>>>(space);
  small_cp_finish_kernel<kRowWarps, kProducers>
      <<<static_cast<unsigned>(heads * (groups - 1) * Roles::kTilesPerHead), Roles::kThreads,
         bytes, stream>>>(args, space);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
