// Route choice for GDN prefill, on the two sizes the host knows without a sync (the total tokens
// and the sequences; their lengths live on the device, in cu_seqlens, and are never read back, so
// the call stays CUDA-graph capturable):
//   - at least kSmallChunkMinTokens tokens, kSmallChunkMinAvgTokens per sequence on average: the
//     small-chunk route, in context-parallel groups
//     where few sequences leave SMs idle and the workspace holds the groups' matrices and
//     per-token partials (small_cp_groups), else 8 chain warps per CTA from
//     kSmallChunkWideItems (sequence, head) pairs (from kSmallPersistentMinItems a fixed grid of
//     persistent CTAs), or 2; four producer warps per CTA but where
//     narrow CTAs would crowd the SMs (kSmallFourProducerCtas), there two;
//   - at most kSerialMaxTokens tokens: the token-serial route;
//   - with the workspace for the chunk records and at most kSplitMaxChains (sequence, head)
//     chains (and kRankMaxSeqs sequences): the split route, its value slabs by the chain's own
//     rule (chain_slabs), or in context-parallel groups (split_groups) where even its chain
//     leaves SMs idle and the workspace also holds the groups' state maps;
//   - few (sequence, head, slab) items and long sequences on average, with the workspace: the
//     context-parallel route, in as many groups per sequence as fill kMinCtas CTAs (at most
//     kCpMaxGroups);
//   - otherwise the chunked route, its value slabs per head from the number of sequences by the
//     continuous rule in tuning.h.
#include "dispatch.h"
#include "launch_small_chunk.cuh"
#include "route_chunked.cuh"
#include "route_context_parallel.cuh"
#include "route_small_chunk_cp.cuh"
#include "route_small_chunk_persistent.cuh"
#include "route_split.cuh"
#include "route_token_serial.cuh"

namespace khk::gdn_prefill {
namespace {

// The value slabs per head for `num_seqs` sequences (1, 2, 4 or 8).
int chunked_slabs(int64_t num_seqs) {
  int slabs = 1;
  while (slabs < kMaxSlabs && num_seqs * kVHeads * slabs < kMinCtas) slabs *= 2;
  return slabs;
}

// The split route's chain slabs (2, 4 or 8): it repeats no key work per slab, so only the
// grid's kMinCtas and kChainMaxSlabs bound them.
int chain_slabs(int64_t num_seqs) {
  int slabs = 2;
  while (slabs < kChainMaxSlabs && num_seqs * kVHeads * slabs < kMinCtas) slabs *= 2;
  return slabs;
}

bool takes_token_serial(int64_t total_tokens) {
  return kSerialMaxTokens > 0 && total_tokens <= kSerialMaxTokens;
}

// Short sequences on average go to the token-serial route where it would take the call.
bool takes_small_chunk(int64_t total_tokens, int64_t num_seqs) {
  return kSmallChunkMinTokens > 0 && total_tokens >= kSmallChunkMinTokens &&
         (total_tokens >= num_seqs * kSmallChunkMinAvgTokens || !takes_token_serial(total_tokens));
}

// Groups per sequence of the small-chunk route's context-parallel form (tuning.h); 0: not taken.
int small_cp_groups(int64_t total_tokens, int64_t num_seqs) {
  if (!takes_small_chunk(total_tokens, num_seqs)) return 0;
  int groups = 0;
  for (int g = 2; g <= kSmallCpMaxGroups; ++g) {
    if (num_seqs * kVHeads * small_cp_map_walks(g) > kSmallCpCtas) break;
    if (total_tokens < g * num_seqs * kSmallCpGroupTokens) break;
    groups = g;
  }
  const bool long_groups = kSmallCpLongGroupTokens > 0 && groups >= kSmallCpLongMinGroups &&
                           total_tokens >= groups * num_seqs * kSmallCpLongGroupTokens;
  return groups >= kSmallCpMinGroups || long_groups ? groups : 0;
}

// Whether a route that needs no workspace takes the call before the others are considered.
bool takes_workspace_free(int64_t total_tokens, int64_t num_seqs) {
  return takes_small_chunk(total_tokens, num_seqs) || takes_token_serial(total_tokens);
}

// Groups per sequence of the context-parallel route; below 2 the route is not taken.
int context_parallel_groups(int64_t total_tokens, int64_t num_seqs) {
  if (kCpMaxGroups < 2 || takes_workspace_free(total_tokens, num_seqs)) return 0;
  if (total_tokens < kCpMinTokensPerSeq * num_seqs) return 0;
  const int64_t items = num_seqs * kVHeads * chunked_slabs(num_seqs);
  const int64_t groups = kMinCtas / items;
  return groups < 2 ? 0 : static_cast<int>(groups < kCpMaxGroups ? groups : kCpMaxGroups);
}

// Whether the split route fits the call's sizes (the workspace is checked by the caller).
bool takes_split(int64_t total_tokens, int64_t num_seqs) {
  return !takes_workspace_free(total_tokens, num_seqs) && num_seqs <= kRankMaxSeqs &&
         num_seqs * kVHeads <= kSplitMaxChains;
}

// Context-parallel groups per sequence of the split route (1: none): with kSplitCp, where its
// chain at 64-column slabs leaves at least half of kMinCtas idle and the sequences average at
// least kCpMinTokensPerSeq tokens; at most kCpMaxGroups.
int split_groups(int64_t total_tokens, int64_t num_seqs) {
  if (!kSplitCp || kCpMaxGroups < 2 || total_tokens < kCpMinTokensPerSeq * num_seqs) return 1;
  const int64_t groups = kMinCtas / (num_seqs * kVHeads * kSplitCpSlabs);
  return groups < 2 ? 1 : static_cast<int>(groups < kCpMaxGroups ? groups : kCpMaxGroups);
}

}  // namespace

uint64_t workspace_bytes(int64_t total_tokens, int64_t num_seqs) {
  if (const int groups = small_cp_groups(total_tokens, num_seqs))
    return SmallGroupSpace::floats(num_seqs, groups, total_tokens) * sizeof(float);
  if (takes_split(total_tokens, num_seqs))
    return split_workspace_bytes(total_tokens, num_seqs, split_groups(total_tokens, num_seqs));
  const int groups = context_parallel_groups(total_tokens, num_seqs);
  return groups ? context_parallel_workspace_floats(num_seqs, groups) * sizeof(float) : 0;
}

cudaError_t dispatch(const PrefillArgs& args, void* workspace, uint64_t workspace_size,
                     cudaStream_t stream) {
  const bool aligned = workspace && reinterpret_cast<uintptr_t>(workspace) % 16 == 0;
  // The small-chunk route copies a and b as 4-byte pairs; a view starting at an odd bf16 goes to
  // the routes that read them as scalars (the token-serial route up to its threshold, else the
  // chunked one).
  const bool gate_pairs_aligned = reinterpret_cast<uintptr_t>(args.a) % 4 == 0 &&
                                  reinterpret_cast<uintptr_t>(args.b) % 4 == 0;
  const int small_groups = small_cp_groups(args.total_tokens, args.num_seqs);
  if (small_groups && aligned && gate_pairs_aligned &&
      workspace_size >=
          SmallGroupSpace::floats(args.num_seqs, small_groups, args.total_tokens) * sizeof(float))
    return launch_small_chunk_cp<8, 4>(args, static_cast<float*>(workspace), small_groups,
                                       stream);
  if (takes_small_chunk(args.total_tokens, args.num_seqs) && gate_pairs_aligned) {
    if (args.num_seqs * kVHeads >= kSmallChunkWideItems) {
      if (kSmallPersistentCtas > 0 && args.num_seqs <= kRankMaxSeqs &&
          args.num_seqs * kVHeads >= kSmallPersistentMinItems)
        return launch_small_chunk_persistent<4>(args, static_cast<int>(kSmallPersistentCtas),
                                                stream);
      return launch_small_chunk<8, 4>(args, stream);
    }
    const int64_t narrow_ctas = args.num_seqs * kVHeads * SmallRoles<2>::kTilesPerHead;
    return narrow_ctas <= kSmallFourProducerCtas ? launch_small_chunk<2, 4>(args, stream)
                                                 : launch_small_chunk<2, 2>(args, stream);
  }
  if (takes_token_serial(args.total_tokens)) return launch_token_serial(args, stream);
  if (aligned && takes_split(args.total_tokens, args.num_seqs) &&
      workspace_size >= record_workspace_bytes(args.total_tokens, args.num_seqs)) {
    unsigned char* records = static_cast<unsigned char*>(workspace);
    const int groups = split_groups(args.total_tokens, args.num_seqs);
    if (groups > 1 &&
        workspace_size >= split_workspace_bytes(args.total_tokens, args.num_seqs, groups))
      return launch_split_context_parallel<kHeadSize / kSplitCpSlabs>(args, records, groups,
                                                                       stream);
    switch (chain_slabs(args.num_seqs)) {
      case 2: return launch_split<64>(args, records, stream);
      case 4: return launch_split<32>(args, records, stream);
      default: return launch_split<16>(args, records, stream);
    }
  }
  const int groups = context_parallel_groups(args.total_tokens, args.num_seqs);
  if (groups && aligned &&
      workspace_size >= context_parallel_workspace_floats(args.num_seqs, groups) * sizeof(float)) {
    float* w = static_cast<float*>(workspace);
    switch (chunked_slabs(args.num_seqs)) {
      case 1: return launch_context_parallel<128>(args, w, groups, stream);
      case 2: return launch_context_parallel<64>(args, w, groups, stream);
      case 4: return launch_context_parallel<32>(args, w, groups, stream);
      default: return launch_context_parallel<16>(args, w, groups, stream);
    }
  }
  switch (chunked_slabs(args.num_seqs)) {
    case 1: return launch_chunked<128>(args, stream);
    case 2: return launch_chunked<64>(args, stream);
    case 4: return launch_chunked<32>(args, stream);
    default: return launch_chunked<16>(args, stream);
  }
}

}  // namespace khk::gdn_prefill
