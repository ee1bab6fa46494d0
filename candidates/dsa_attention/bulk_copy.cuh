// Hopper's bulk copy engine (TMA, non-tensor form) and the transaction barriers it completes on:
// one instruction moves a whole contiguous piece (a cache row's 1 KiB of ckv, its 128 B of kpe)
// from global into shared memory, where 16-byte cp.async needs 72 instructions per row. A stage's
// barrier expects the stage's bytes; the copies count them down as they land.
//
// Compiled by a host compiler (the tests' CTA emulator), a barrier keeps PTX's state in its 8
// bytes (phase, arrivals per phase, pending arrivals, pending transaction bytes), a copy lands
// later, when every thread waits (the emulator's deferred events), and counts its bytes down, and
// a wait yields until its phase completes: a read that does not wait sees poisoned shared memory,
// and wrong expected bytes or a wrong parity deadlock or read early.
#pragma once

#include <cstdint>
#include <cstring>

#include "warp_mma.cuh"

#if !defined(__CUDACC__)
namespace khk_host {  // tests/cuda_on_host.cpp
void pipeline_yield();
void pipeline_progress();
void pipeline_defer(void (*fn)(void*), void* arg);
}  // namespace khk_host
#endif

namespace khk::dsa_attention {

#if !defined(__CUDACC__)
namespace host_tx_barrier {
// Bit 63 the phase, 48-62 the arrivals a phase expects, 32-47 those pending, 0-31 the pending
// transaction bytes (signed: a copy may land before its byte count is announced).
inline uint64_t pack(uint64_t phase, uint64_t expected, uint64_t pending, int32_t bytes) {
  return phase << 63 | expected << 48 | pending << 32 | static_cast<uint32_t>(bytes);
}
inline void update(uint64_t* barrier, int arrivals, int32_t bytes) {
  const uint64_t v = *reinterpret_cast<volatile uint64_t*>(barrier);
  const uint64_t phase = v >> 63, expected = (v >> 48) & 0x7fff;
  const uint64_t pending = ((v >> 32) & 0xffff) - static_cast<uint64_t>(arrivals);
  const int32_t left = static_cast<int32_t>(static_cast<uint32_t>(v)) + bytes;
  *barrier = pending == 0 && left == 0 ? pack(phase ^ 1, expected, expected, 0)
                                       : pack(phase, expected, pending, left);
}
struct Copy {
  void* dst;
  const void* src;
  uint32_t bytes;
  uint64_t* barrier;
};
inline void land(void* arg) {  // from the emulator's scheduler
  Copy* c = static_cast<Copy*>(arg);
  std::memcpy(c->dst, c->src, c->bytes);
  update(c->barrier, 0, -static_cast<int32_t>(c->bytes));
  delete c;
}
}  // namespace host_tx_barrier
#endif

__device__ __forceinline__ void barrier_init(uint64_t* barrier, int arrivals) {
#if defined(__CUDACC__)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(barrier)),
               "r"(arrivals)
               : "memory");
#else
  *barrier = host_tx_barrier::pack(0, static_cast<uint64_t>(arrivals),
                                   static_cast<uint64_t>(arrivals), 0);
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
  host_tx_barrier::update(barrier, 1, static_cast<int32_t>(bytes));
  khk_host::pipeline_progress();
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
  while ((*reinterpret_cast<volatile uint64_t*>(barrier) >> 63) == parity)
    khk_host::pipeline_yield();
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
  khk_host::pipeline_defer(host_tx_barrier::land,
                           new host_tx_barrier::Copy{dst, src, bytes, barrier});
#endif
}

}  // namespace khk::dsa_attention
