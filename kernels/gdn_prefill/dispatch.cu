// Route choice for GDN prefill, on the two sizes the host knows without a sync (the total tokens
// and the sequences; their lengths live on the device, in cu_seqlens, and are never read back, so
// the call stays CUDA-graph capturable):
//   - at most kSerialMaxTokens tokens: the token-serial route;
//   - few (sequence, head, slab) items and long sequences on average, with the workspace: the
//     context-parallel route, in as many groups per sequence as fill kMinCtas CTAs (at most
//     kCpMaxGroups);
//   - otherwise the chunked route, its value slabs per head from the number of sequences by the
//     continuous rule in tuning.h.
#include "dispatch.h"
#include "route_chunked.cuh"
#include "route_context_parallel.cuh"
#include "route_token_serial.cuh"

namespace khk::gdn_prefill {
namespace {

// The value slabs per head for `num_seqs` sequences (1, 2, 4 or 8).
int chunked_slabs(int64_t num_seqs) {
  int slabs = 1;
  while (slabs < kMaxSlabs && num_seqs * kVHeads * slabs < kMinCtas) slabs *= 2;
  return slabs;
}

bool takes_token_serial(int64_t total_tokens) {
  return kSerialMaxTokens > 0 && total_tokens <= kSerialMaxTokens;
}

// Groups per sequence of the context-parallel route; below 2 the route is not taken.
int context_parallel_groups(int64_t total_tokens, int64_t num_seqs) {
  if (kCpMaxGroups < 2 || takes_token_serial(total_tokens)) return 0;
  if (total_tokens < kCpMinTokensPerSeq * num_seqs) return 0;
  const int64_t items = num_seqs * kVHeads * chunked_slabs(num_seqs);
  const int64_t groups = kMinCtas / items;
  return groups < 2 ? 0 : static_cast<int>(groups < kCpMaxGroups ? groups : kCpMaxGroups);
}

}  // namespace

uint64_t workspace_bytes(int64_t total_tokens, int64_t num_seqs) {
  const int groups = context_parallel_groups(total_tokens, num_seqs);
  return groups ? context_parallel_workspace_floats(num_seqs, groups) * sizeof(float) : 0;
}

cudaError_t dispatch(const PrefillArgs& args, void* workspace, uint64_t workspace_size,
                     cudaStream_t stream) {
  if (takes_token_serial(args.total_tokens)) return launch_token_serial(args, stream);
  const int groups = context_parallel_groups(args.total_tokens, args.num_seqs);
  if (groups && workspace && reinterpret_cast<uintptr_t>(workspace) % 16 == 0 &&
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
