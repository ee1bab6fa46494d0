// The split route: the chunked delta rule in two launches, so that the chain of dependent chunks
// carries only the work that depends on the state.
//   1. chunk_prep_kernel (chunk_prep.cuh): every (chunk, value head) of the call in parallel, its
//      key-only stages (gates, A, P, the inverse, Tw, Tu, -W) into a record of the workspace;
//   2. the chunked kernel's kPrepared form: one CTA per (sequence, head, value slab) walks the
//      sequence as the chunked route does, but loads each chunk's record with its K, Q and V and
//      runs only U^T, Vn^T, the output and the state update.
// The records hold exactly the tiles the fused kernel computes in shared memory, so both routes
// give the same bits (unless CHAIN_KSPLIT splits the key columns, which sums them in another
// order). With the key work gone, the chain repeats nothing per value slab, so long
// sequences can be spread over more, narrower slabs than the chunked route affords.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "chunk_prep.cuh"
#include "chunk_record.cuh"
#include "gdn_prefill.cuh"
#include "route_chunked.cuh"
#include "route_context_parallel.cuh"

namespace khk::gdn_prefill {

/// Workspace bytes of the split route in `groups` context-parallel groups (1: none): the records,
/// then the context-parallel route's state maps.
constexpr uint64_t split_workspace_bytes(int64_t total_tokens, int64_t num_seqs, int groups) {
  return record_workspace_bytes(total_tokens, num_seqs) +
         (groups > 1 ? context_parallel_workspace_floats(num_seqs, groups) * sizeof(float) : 0);
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel bodies itself
/// The prep kernel: every (chunk, head) record of the call into `records`.
inline cudaError_t launch_chunk_prep(const PrefillArgs& args, unsigned char* records,
                                     cudaStream_t stream) {
  const cudaError_t e = cudaFuncSetAttribute(
      chunk_prep_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, PrepSmem::kBytes);
  if (e != cudaSuccess) return e;
  const auto prep_ctas = static_cast<unsigned>(record_slots(args.total_tokens, args.num_seqs) *
                                               kVHeads);
  chunk_prep_kernel<<<prep_ctas, kPrepThreads, PrepSmem::kBytes, stream>>>(args, records);
  return cudaSuccess;
}

/// The split route in `groups` (>= 2) context-parallel groups at value slabs of kVS (<= 64)
/// columns, on split_workspace_bytes(T, N, groups) of 16-byte aligned workspace: the prep, then
/// the context-parallel passes on the prepared chain (route_context_parallel.cuh), whose
/// kTransfer and kLocal passes load only the record parts they read.
template <int kVS>
cudaError_t launch_split_context_parallel(const PrefillArgs& args, unsigned char* workspace,
                                          int groups, cudaStream_t stream) {
  const cudaError_t e = launch_chunk_prep(args, workspace, stream);
  if (e != cudaSuccess) return e;
  float* maps = reinterpret_cast<float*>(
      workspace + record_workspace_bytes(args.total_tokens, args.num_seqs));
  return launch_context_parallel<kVS, true>(args, maps, groups, stream, workspace);
}

/// The split route at value slabs of kVS (<= 64) columns, the records in `workspace` (at least
/// record_workspace_bytes(T, N), 16-byte aligned; at most kRankMaxSeqs sequences).
template <int kVS>
cudaError_t launch_split(const PrefillArgs& args, unsigned char* workspace, cudaStream_t stream) {
  cudaError_t e = launch_chunk_prep(args, workspace, stream);
  if (e != cudaSuccess) return e;
  constexpr auto chain = chunked_prefill_kernel<kVS, ChunkPass::kFused, true>;
  constexpr int chain_bytes = ChainSmem<kVS>::kBytes;
  e = cudaFuncSetAttribute(chain, cudaFuncAttributeMaxDynamicSharedMemorySize, chain_bytes);
  if (e != cudaSuccess) return e;
  GroupArgs group_args;
  group_args.records = workspace;
  const auto ctas = static_cast<unsigned>(args.num_seqs * kVHeads * (kHeadSize / kVS));
  chain<<<ctas, kChunkThreads<kVS, true>, chain_bytes, stream>>>(args, group_args);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
