// Shared-memory barriers for a pipeline whose warp roles run at their own pace
// (route_small_chunk_decoupled.cuh): Hopper's mbarrier, used by arrival count only. (The split
// route's bulk copies count bytes on the same barriers: bulk_copy.cuh.) Each buffer of
// a ring has a `full` barrier its producers arrive on and an `empty` one its consumers arrive on;
// a role waits on the phase parity of the round it is in (round r of a slot: parity r & 1; a
// producer's first wait on `empty` is for the phase "before" the first, parity 1, which has
// completed).
//
// Compiled by a host compiler (the tests' CTA emulator), a barrier keeps its state in the same
// 8 bytes -- pending arrivals in bits 0-30, the arrivals a phase expects in bits 32-62, the phase
// in bit 63 -- and a wait that finds its phase not yet complete yields to the other warps
// (tests/cta_emulator.h), so the emulator runs the roles in every order their waits allow and
// reports a deadlock; an arrival also gives way, so the threads it releases run before the arriving
// one goes on; an asynchronous copy lands when its thread waits for it or arrives on its copies
// (mma_tiles.cuh).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "mma_tiles.cuh"

#if !defined(__CUDACC__)
namespace khk_host {  // tests/cuda_on_host.cpp
void pipeline_yield();     // the running thread gives way to the other warps
void pipeline_progress();  // an arrival: a condition other threads wait on may have changed
// fn(arg) later, from the scheduler, latest first (an arrival the hardware makes on its own)
void pipeline_defer(void (*fn)(void*), void* arg);
}  // namespace khk_host
#endif

namespace khk::gdn_prefill {

#if !defined(__CUDACC__)
namespace host_barrier {
constexpr uint64_t kCountMask = 0x7fffffffull;
inline uint64_t pack(uint64_t pending, uint64_t expected, uint64_t phase) {
  return pending | expected << 32 | phase << 63;
}
/// The arrival's count and phase flip alone (no yield: the scheduler runs deferred arrivals).
inline void count(uint64_t* barrier) {
  const uint64_t v = *reinterpret_cast<volatile uint64_t*>(barrier);
  const uint64_t pending = v & kCountMask, expected = (v >> 32) & kCountMask, phase = v >> 63;
  if (v == ~uint64_t{0} || pending == 0 || expected == 0) {  // poisoned: never initialised
    std::fprintf(stderr, "arrival on a barrier that was not initialised\n");
    std::abort();
  }
  *reinterpret_cast<volatile uint64_t*>(barrier) =
      pending > 1 ? pack(pending - 1, expected, phase) : pack(expected, expected, phase ^ 1);
}
inline void arrive(uint64_t* barrier) {
  count(barrier);
  khk_host::pipeline_progress();
  // The other warps run before this thread goes on, as on the device, where whoever waits on the
  // phase may start at once: a buffer read after the arrival that frees it reads the next round.
  khk_host::pipeline_yield();
}
}  // namespace host_barrier
#endif

/// One thread initialises a barrier for `arrivals` arrivals per phase; a CTA barrier must follow
/// before any other thread uses it.
__device__ __forceinline__ void ring_init(uint64_t* barrier, int arrivals) {
#if defined(__CUDACC__)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(barrier)),
               "r"(arrivals)
               : "memory");
#else
  const auto count = static_cast<uint64_t>(arrivals);
  *barrier = host_barrier::pack(count, count, 0);
#endif
}

/// Makes the initialised barriers visible to the asynchronous proxy (cp.async's arrivals); once,
/// after the inits, before the CTA barrier.
__device__ __forceinline__ void ring_init_fence() {
#if defined(__CUDACC__)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

/// This thread's arrival (release: its earlier shared-memory writes are seen by whoever waits on
/// the phase).
__device__ __forceinline__ void ring_arrive(uint64_t* barrier) {
#if defined(__CUDACC__)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(barrier))
               : "memory");
#else
  host_barrier::arrive(barrier);
#endif
}

/// An arrival made when this thread's earlier cp.async copies have landed (the barrier's count
/// includes it: .noinc).
__device__ __forceinline__ void ring_arrive_on_copies(uint64_t* barrier) {
#if defined(__CUDACC__)
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(
                   smem_address(barrier))
               : "memory");
#else
  // The copies land now, the arrival later: deferred to when every thread waits, the latest
  // first, so the arrivals of one thread come in reverse order (PTX orders none of them).
  khk_host::async_wait_all();
  khk_host::pipeline_defer([](void* b) { host_barrier::count(static_cast<uint64_t*>(b)); },
                           barrier);
  khk_host::pipeline_yield();
#endif
}

/// Waits until the phase of parity `parity` has completed (acquire); then a __syncwarp before
/// warp-collective instructions, since the lanes may leave the loop apart.
__device__ __forceinline__ void ring_wait(uint64_t* barrier, uint32_t parity) {
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

/// A role's place in a ring of kSlots buffers: the slot of its current round and that round's
/// parity.
template <int kSlots>
struct RingCursor {
  int slot = 0;
  uint32_t parity = 0;
  __device__ __forceinline__ void advance() {
    if (++slot == kSlots) slot = 0, parity ^= 1;
  }
  /// n steps at once (a lane of a role that takes every n-th chunk, or skips its first n).
  __device__ __forceinline__ void advance(int n) {
    for (int i = 0; i < n; ++i) advance();
  }
};

}  // namespace khk::gdn_prefill
