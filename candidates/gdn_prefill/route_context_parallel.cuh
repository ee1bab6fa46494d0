// The context-parallel route: parallelism inside long sequences (issue 11). Each sequence is cut
// into `groups` runs of whole 64-token chunks. The state after a group is affine in the state
// before it, S_out = S_in A_g + B_g (M = S^T, [v][k]), so:
//   1. kTransfer and kLocal passes of the chunked kernel compute, for every group in parallel,
//      A_g (its chunks run from the identity with zero values) and B_g (from zero with its
//      values) into the workspace;
//   2. the scan (here) walks the groups of each (sequence, head): entry_0 = the initial state,
//      entry_{g+1} = entry_g A_g + B_g, in fp32 (tools/gdn_cp_model.py: one-bf16 products would lift the
//      state error to 7.7e-3 of the 1e-2 tolerance at 256-token groups; fp32 keeps the chunked
//      route's 1.8e-3);
//   3. the kFromEntry pass runs every group again from its entry state, writing the outputs, and
//      the last group the new state.
// Three passes of the chunk work instead of one, in exchange for chains `groups` times shorter:
// it pays where (sequence, head, slab) items are far fewer than the SMs and sequences are long.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "gdn_prefill.cuh"
#include "route_chunked.cuh"

namespace khk::gdn_prefill {

constexpr int kScanRows = 16;  // value rows of one state per scan CTA
constexpr int kScanThreads = 128;
constexpr int kScanColumns = kHeadSize * kScanRows / kScanThreads;  // outputs per thread: 16
constexpr int kScanSmemBytes = (kHeadSize * kHeadSize + kScanRows * kHeadSize) * 4;

/// Workspace floats of the context-parallel route: A_g, B_g and the entry states.
constexpr int64_t context_parallel_workspace_floats(int64_t num_seqs, int groups) {
  return 3 * num_seqs * kVHeads * groups * int64_t{kStateFloats};
}

/// One scan CTA per (sequence, head, 16 value rows): thread t owns row t / 8 and 16 columns
/// from 16 (t % 8); the group's A_g is staged whole in shared memory.
__global__ void __launch_bounds__(kScanThreads)
    context_parallel_scan_kernel(PrefillArgs args, GroupArgs group_args) {
  extern __shared__ __align__(16) unsigned char smem[];
  float* sA = reinterpret_cast<float*>(smem);  // A_g, [k][k'], 64 KB
  float* sM = sA + kHeadSize * kHeadSize;      // the CTA's rows of entry_g, [r][k]
  const int64_t cta = blockIdx.x;
  const int row0 = static_cast<int>(cta % (kHeadSize / kScanRows)) * kScanRows;
  const int64_t head_index = cta / (kHeadSize / kScanRows);  // sequence * 8 + head
  const int64_t seq = head_index / kVHeads;
  const int groups = group_args.groups;
  const int t = static_cast<int>(threadIdx.x), r = t / 8, j0 = (t % 8) * kScanColumns;
  const int64_t length = args.cu_seqlens[seq + 1] - args.cu_seqlens[seq];

  // entry_0 is the initial state (zero for an empty sequence, whatever the state was).
  const float* initial =
      args.state && length > 0 ? args.state + head_index * kStateFloats : nullptr;
  // entry_0 goes to the workspace too: the kFromEntry pass must not read the state itself, which
  // its last group may already have overwritten when new_state == state.
  float* entry0 = group_args.entry + head_index * groups * int64_t{kStateFloats};
  for (int j = 0; j < kScanColumns; ++j) {
    const float x = initial ? initial[(row0 + r) * kHeadSize + j0 + j] : 0.f;
    sM[r * kHeadSize + j0 + j] = x;
    entry0[(row0 + r) * kHeadSize + j0 + j] = x;
  }

  for (int g = 0; g + 1 < groups; ++g) {
    const int64_t matrix = (head_index * groups + g) * kStateFloats;
    __syncthreads();  // the previous step's reads of sA and sM are done
    for (int i = t; i < kHeadSize * kHeadSize / 4; i += kScanThreads)
      reinterpret_cast<float4*>(sA)[i] =
          reinterpret_cast<const float4*>(group_args.maps + matrix)[i];
    float acc[kScanColumns];
    for (int j = 0; j < kScanColumns; ++j)
      acc[j] = group_args.local[matrix + (row0 + r) * kHeadSize + j0 + j];
    __syncthreads();  // sA complete
    for (int k = 0; k < kHeadSize; ++k) {
      const float m = sM[r * kHeadSize + k];
      for (int j = 0; j < kScanColumns; ++j) acc[j] = fmaf(m, sA[k * kHeadSize + j0 + j], acc[j]);
    }
    __syncthreads();  // every thread is done reading sM
    float* entry = group_args.entry + matrix + kStateFloats;  // entry_{g+1}
    for (int j = 0; j < kScanColumns; ++j) {
      sM[r * kHeadSize + j0 + j] = acc[j];
      entry[(row0 + r) * kHeadSize + j0 + j] = acc[j];
    }
  }
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel bodies itself
/// The four launches of the route at value slabs of kVS columns, on the workspace of
/// context_parallel_workspace_floats(num_seqs, groups) floats. kPrepared: the passes are the
/// split route's chain on the chunk records at `records` (route_split.cuh launches the prep).
template <int kVS, bool kPrepared = false>
cudaError_t launch_context_parallel(const PrefillArgs& args, float* workspace, int groups,
                                    cudaStream_t stream, const unsigned char* records = nullptr) {
  using Smem = std::conditional_t<kPrepared, ChainSmem<kVS>, ChunkSmem<kVS>>;
  const int64_t maps = args.num_seqs * kVHeads * groups * int64_t{kStateFloats};
  const GroupArgs group_args{groups, workspace, workspace + maps, workspace + 2 * maps, records};
  const int bytes = Smem::kBytes;
  constexpr auto transfer = chunked_prefill_kernel<kVS, ChunkPass::kTransfer, kPrepared>;
  constexpr auto local = chunked_prefill_kernel<kVS, ChunkPass::kLocal, kPrepared>;
  constexpr auto from_entry = chunked_prefill_kernel<kVS, ChunkPass::kFromEntry, kPrepared>;
  for (const void* kernel : {reinterpret_cast<const void*>(transfer),
                             reinterpret_cast<const void*>(local),
                             reinterpret_cast<const void*>(from_entry)}) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) return e;
  }
  const cudaError_t e = cudaFuncSetAttribute(
      context_parallel_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kScanSmemBytes);
  if (e != cudaSuccess) return e;
  const auto ctas = static_cast<unsigned>(args.num_seqs * kVHeads * (kHeadSize / kVS) * groups);
  const auto scan_ctas = static_cast<unsigned>(args.num_seqs * kVHeads * (kHeadSize / kScanRows));
  const int threads = kVS * 2;  // no key split outside the fused pass
  transfer<<<ctas, threads, bytes, stream>>>(args, group_args);
  local<<<ctas, threads, bytes, stream>>>(args, group_args);
  context_parallel_scan_kernel<<<scan_ctas, kScanThreads, kScanSmemBytes, stream>>>(args,
                                                                                 group_args);
  from_entry<<<ctas, threads, bytes, stream>>>(args, group_args);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
