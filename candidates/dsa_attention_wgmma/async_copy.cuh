// The asynchronous copies the split route gathers with: 16-byte cp.async from global into shared
// memory, each piece to any address (so a gathered row can land in the swizzled layout the
// warpgroup MMAs read, smem_layout.cuh), in commit groups that each thread waits for.
#pragma once

#include <cstdint>

namespace khk::dsa_attention {

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Copies 16 bytes from global to shared memory asynchronously (L2 only: every row is read once
/// per CTA). `valid == false` writes 16 zero bytes instead and reads nothing from `src`.
__device__ __forceinline__ void gather_16b(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void gather_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most `kPending` of this thread's committed gather groups are still in flight.
template <int kPending>
__device__ __forceinline__ void gather_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

/// Orders this thread's earlier shared-memory writes (cp.async's included) before the async
/// proxy's reads: the warpgroup MMAs read their operands through it. A CTA barrier must follow
/// before another thread's MMA reads them.
__device__ __forceinline__ void fence_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace khk::dsa_attention
