// Thread-block clusters for the context-parallel scan: the CTA's rank, the cluster barrier, and a
// store into the shared memory of another CTA of the cluster (distributed shared memory).
//
// Compiled by a host compiler (the tests' CTA emulator, one CTA at a time), a cluster is the one
// CTA: rank 0, the barrier a CTA barrier, the store a local one.
#pragma once

#include <cstdint>

#include "mma_tiles.cuh"  // smem_address

#if defined(__CUDACC__)
#define KHK_CLUSTER_DIMS(x) __cluster_dims__(x, 1, 1)
#else
#define KHK_CLUSTER_DIMS(x)
#endif

namespace khk::gdn_prefill {

/// Every thread of every CTA of the cluster: its earlier shared-memory stores into any CTA of
/// the cluster are visible to every thread of the cluster after it.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDACC__)
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __syncthreads();
#endif
}

/// `v` into the shared memory of CTA `rank` of the cluster, at the offset `at` has in this CTA's.
__device__ __forceinline__ void store_to_cluster(float* at, uint32_t rank, float2 v) {
#if defined(__CUDACC__)
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " st.shared::cluster.v2.f32 [remote], {%2, %3};\n}\n" ::"r"(smem_address(at)),
      "r"(rank), "f"(v.x), "f"(v.y)
      : "memory");
#else
  (void)rank;
  *reinterpret_cast<float2*>(at) = v;
#endif
}

}  // namespace khk::gdn_prefill
