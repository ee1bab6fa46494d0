// Hopper's bulk copy engine (the non-tensor form of TMA) and the transaction barrier it completes
// on, for the split route's chain: one instruction moves a contiguous piece (a 55 KB chunk record,
// a 256-byte K or Q row) into shared memory, where 16-byte cp.async costs one instruction per 16
// bytes from every lane. A buffer's barrier expects its bytes; the copies count them down.
//
// Compiled by a host compiler (the tests' CTA emulator), a copy is a memcpy that has landed when
// it returns, and the barrier calls do nothing.
#pragma once

#include <cstdint>
#include <cstring>

#include "mma_tiles.cuh"
#include "pipeline_barrier.cuh"

namespace khk::gdn_prefill {

/// The split route's barriers are pipeline_barrier.cuh's on the device; on the host, where its
/// copies land at once and CTA barriers order everything, they do nothing.
__device__ __forceinline__ void barrier_init(uint64_t* barrier, int arrivals) {
#if defined(__CUDACC__)
  ring_init(barrier, arrivals);
  ring_init_fence();
#else
  (void)barrier, (void)arrivals;
#endif
}

/// One arrival that also announces `bytes` more to land before the phase completes.
__device__ __forceinline__ void barrier_arrive_expect(uint64_t* barrier, uint32_t bytes) {
#if defined(__CUDACC__)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   smem_address(barrier)),
               "r"(bytes)
               : "memory");
#else
  (void)barrier, (void)bytes;
#endif
}

/// Waits until the phase with parity `parity` of `barrier` has completed.
__device__ __forceinline__ void barrier_wait(uint64_t* barrier, uint32_t parity) {
#if defined(__CUDACC__)
  ring_wait(barrier, parity);
#else
  (void)barrier, (void)parity;
#endif
}

/// Orders this thread's earlier generic-proxy accesses of shared memory (the ldmatrix reads of a
/// buffer, after the CTA barrier that ends them) before its later bulk copies into it.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDACC__)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Orders global memory this thread has seen written by other CTAs' generic stores (after the
/// acquire that saw their signal) before its later bulk copies from it.
__device__ __forceinline__ void fence_proxy_async_global() {
#if defined(__CUDACC__)
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif
}

/// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to this CTA's shared
/// memory; the landed bytes count down `barrier`'s transaction count.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes,
                                                    uint64_t* barrier) {
#if defined(__CUDACC__)
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(smem_address(dst)),
      "l"(src), "r"(bytes), "r"(smem_address(barrier))
      : "memory");
#else
  (void)barrier;
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace khk::gdn_prefill
