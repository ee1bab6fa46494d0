// Thread-block clusters for the context-parallel scan: one bulk copy multicast into the shared
// memory of every CTA of a cluster (one L2 read where each CTA would read the same bytes), the
// remote barrier arrival that tells the issuing CTA a buffer may be refilled, and the cluster
// barrier.
//
// Compiled by a host compiler (the tests' CTA emulator, one CTA at a time), a cluster is the one
// CTA: rank 0, the multicast a memcpy into this CTA's buffer, the barriers no-ops (bulk_copy.cuh).
#pragma once

#include <cstdint>
#include <cstring>

#include "bulk_copy.cuh"

#if defined(__CUDACC__)
#define KHK_CLUSTER_DIMS(x) __cluster_dims__(x, 1, 1)
#else
#define KHK_CLUSTER_DIMS(x)
#endif

namespace khk::gdn_prefill {

/// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
#if defined(__CUDACC__)
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
#else
  return 0;
#endif
}

/// Every thread of every CTA of the cluster; orders barrier initialisation before remote use.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDACC__)
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

/// `bytes` (a multiple of 16, 16-byte aligned) from global memory to the same offset of the
/// shared memory of every CTA in `cta_mask`, each CTA's barrier at `barrier`'s offset counting
/// them down.
__device__ __forceinline__ void multicast_copy_to_shared(void* dst, const void* src,
                                                         uint32_t bytes, uint64_t* barrier,
                                                         uint16_t cta_mask) {
#if defined(__CUDACC__)
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1], %2, [%3], %4;\n" ::"r"(smem_address(dst)),
      "l"(src), "r"(bytes), "r"(smem_address(barrier)), "h"(cta_mask)
      : "memory");
#else
  (void)barrier, (void)cta_mask;
  std::memcpy(dst, src, bytes);
#endif
}

/// One arrival on the barrier at `barrier`'s offset in the shared memory of CTA `rank` of the
/// cluster, releasing this thread's earlier accesses to the cluster.
__device__ __forceinline__ void barrier_arrive_remote(uint64_t* barrier, uint32_t rank) {
#if defined(__CUDACC__)
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(
          smem_address(barrier)),
      "r"(rank)
      : "memory");
#else
  (void)barrier, (void)rank;
#endif
}

}  // namespace khk::gdn_prefill
