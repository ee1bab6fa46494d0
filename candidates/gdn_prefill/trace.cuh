// Optional phase timestamps of the decoupled small-chunk CTAs, for bench/micro/gdn_timeline.cu:
// with GDN_TRACE defined, lane 0 of the warp that reaches a mark stores %globaltimer into
// g_trace[cta][phase]; without it (the library, the harness) the marks compile to nothing.
#pragma once

#include <cstdint>

namespace khk::gdn_prefill {

enum TracePhase {
  kTraceEntry,          // thread 0, the kernel's first instruction
  kTraceItem,           // thread 0, the CTA's sequence known (cu_seqlens read)
  kTraceRingStarted,    // thread 0, past the CTA barrier that publishes the rings
  kTraceFirstTile,      // the gate warp: chunk 0's tile landed
  kTraceFirstProducts,  // the gate warp: chunk 0's phase A done
  kTraceFirstOperands,  // the solve warp: chunk 0's phase B done
  kTraceFirstChain,     // chain warp 0: chunk 0's step done
  kTraceLastChain,      // chain warp 0: the last chunk's step done
  kTraceStored,         // chain warp 0: its state rows stored
  kTracePhases
};
constexpr int kTraceCtas = 4096;

#if defined(GDN_TRACE)
__device__ uint64_t g_trace[kTraceCtas][kTracePhases];

// The SM each CTA ran on (%smid, stored at its entry mark), so that a timeline can tell
// whether CTAs that ran slower shared an SM pair or a scan's neighbourhood.
#define GDN_TRACE_HAS_SMID 1
__device__ uint32_t g_trace_smid[kTraceCtas];
__device__ uint32_t g_trace_scan_smid[kTraceCtas];
__device__ __forceinline__ uint32_t trace_smid() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ __forceinline__ void trace(TracePhase phase) {
  if (threadIdx.x % 32 != 0 || blockIdx.x >= kTraceCtas) return;
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  g_trace[blockIdx.x][phase] = now;
  if (phase == kTraceEntry) g_trace_smid[blockIdx.x] = trace_smid();
}
// The context-parallel route's scan and correction, thread 0 of each CTA: the scan's entry, its
// groups 0 and 1 seen, then the end of each step; the correction's start (entry state and walks
// seen) and end.
#define GDN_TRACE_HAS_CP 1
constexpr int kTraceScanMarks = 2 + 16;
__device__ uint64_t g_trace_scan[kTraceCtas][kTraceScanMarks];
__device__ uint64_t g_trace_correct[kTraceCtas][2];
__device__ __forceinline__ void trace_at(uint64_t* slot) {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  *slot = now;
}
__device__ __forceinline__ void trace_scan(int mark) {
  if (threadIdx.x == 0 && blockIdx.x < kTraceCtas && mark < kTraceScanMarks) {
    trace_at(&g_trace_scan[blockIdx.x][mark]);
    if (mark == 0) g_trace_scan_smid[blockIdx.x] = trace_smid();
  }
}
__device__ __forceinline__ void trace_correct(int mark) {
  if (threadIdx.x == 0 && blockIdx.x < kTraceCtas) trace_at(&g_trace_correct[blockIdx.x][mark]);
}
#else
__device__ __forceinline__ void trace(TracePhase) {}
__device__ __forceinline__ void trace_scan(int) {}
__device__ __forceinline__ void trace_correct(int) {}
#endif

}  // namespace khk::gdn_prefill
