// Hopper's bulk copy engine (TMA, non-tensor form) and the transaction barriers it completes on:
// one instruction moves a whole contiguous piece (a cache row's 1 KiB of ckv, its 128 B of kpe)
// from global into shared memory, where 16-byte cp.async needs 72 instructions per row. A stage's
// barrier expects the stage's bytes; the copies count them down as they land.
//
// Compiled by a host compiler (the tests' CTA emulator), a copy is a memcpy that has landed when
// it returns and the barrier calls do nothing: the route's CTA barrier after each wait orders
// the copies before their readers. So the emulation tests do not check the barriers' protocol
// (expected bytes, phase parity) of this form; the cp.async form (TMA_GATHER=0), whose host copies
// land only when their thread waits, checks that every read waits.
#pragma once

#include <cstdint>
#include <cstring>

#include "warp_mma.cuh"

namespace khk::dsa_attention {

__device__ __forceinline__ void barrier_init(uint64_t* barrier, int arrivals) {
#if defined(__CUDACC__)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(barrier)),
               "r"(arrivals)
               : "memory");
#else
  (void)barrier, (void)arrivals;
#endif
}

/// Makes the barriers' initialisation visible to the bulk copy engine (and the cluster) before
/// any copy names them.
__device__ __forceinline__ void barrier_init_fence() {
#if defined(__CUDACC__)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
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
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_address(barrier)), "r"(parity)
        : "memory");
  }
#else
  (void)barrier, (void)parity;
#endif
}

/// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to this CTA's
/// shared memory; the landed bytes count down `barrier`'s transaction count.
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

}  // namespace khk::dsa_attention
