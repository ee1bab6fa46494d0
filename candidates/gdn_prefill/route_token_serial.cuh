// The token-serial route: the reference's recurrence token by token in fp32, one CTA per
// (sequence, value head, tile of kSerialRows value rows), the rows in registers. It does no tensor
// work and has a tiny code footprint, so it suits calls whose sequences are short: the chunked
// route's fixed cost per chunk (K K^T, the inverse, W; about 2.7 us per 16-token tile at <= 256
// tokens on one H200) buys nothing there. Its time grows with the longest sequence's tokens (one
// lane exchange per SERIAL_ROUND tokens, ~100 instructions per token per warp at the defaults)
// and its issue work with all tokens, so the dispatch takes it only for small totals. The per-CTA program: token_serial_cta.h; its staging:
// serial_staging.h.
#pragma once

#include <cuda_runtime.h>

#include "gdn_prefill.cuh"
#include "token_serial_cta.h"

namespace khk::gdn_prefill {

/// The device side of token_serial_cta's `Cta`.
struct DeviceCta {
  unsigned char* smem;
  __device__ __forceinline__ int thread() const { return static_cast<int>(threadIdx.x); }
  __device__ __forceinline__ void sync() const { __syncthreads(); }
  __device__ __forceinline__ float shfl_xor(float x, int lane_mask) const {
    return __shfl_xor_sync(0xffffffffu, x, lane_mask);
  }
};

__global__ void __launch_bounds__(kSerialThreads) token_serial_kernel(PrefillArgs args) {
  extern __shared__ __align__(16) unsigned char smem[];
  DeviceCta cta{smem};
  token_serial_cta(args, blockIdx.x, cta);
}

/// One CTA per (sequence, head, row tile), in that order. The opt-in to more than 48 KB of shared
/// memory is set on every call, as the chunked route does (a remembered flag would be a static
/// shared by every loaded copy of this kernel).
inline cudaError_t launch_token_serial(const PrefillArgs& args, cudaStream_t stream) {
  constexpr int bytes = sizeof(SerialSmem);
  const cudaError_t e = cudaFuncSetAttribute(token_serial_kernel,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  const int64_t ctas = args.num_seqs * kVHeads * kSerialTilesPerHead;
  if (ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;  // 2^24 sequences at 32 tiles
  token_serial_kernel<<<static_cast<unsigned>(ctas), kSerialThreads, bytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace khk::gdn_prefill
