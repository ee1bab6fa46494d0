// Optional phase timestamps of the split route's kernels, for bench/micro/dsa_timeline.cu: with
// DSA_TRACE defined, thread 0 of each CTA stores %globaltimer at the marked points into
// g_trace[kernel][cta][phase]; without it (the library, the harness) the marks compile to nothing.
#pragma once

#include <cstdint>

namespace khk::dsa_attention {

enum TraceKernel { kTraceSplit, kTraceMerge };
constexpr int kTracePhases = 7;
constexpr int kTraceCtas = 8192;

#if defined(DSA_TRACE)
__device__ uint64_t g_trace[2][kTraceCtas][kTracePhases];

__device__ __forceinline__ void trace(TraceKernel kernel, int phase) {
  const unsigned cta = blockIdx.x + blockIdx.y * gridDim.x;
  if (threadIdx.x != 0 || cta >= kTraceCtas) return;
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  g_trace[kernel][cta][phase] = now;
}
#else
__device__ __forceinline__ void trace(TraceKernel, int) {}
#endif

}  // namespace khk::dsa_attention
