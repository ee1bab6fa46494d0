// What the micro-benchmarks here share: a kernel-side clock, a CUDA error check, an environment
// flag, two timers and a median. Each micro-benchmark is one translation unit that includes this
// once.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace micro {

/// The GPU's global nanosecond clock (%globaltimer), the same on every SM.
__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

/// True on success; else prints `what` and the error to stderr.
inline bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

/// A flag from the environment: `fallback` where unset, else whether its value is a non-zero number.
inline bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) != 0 : fallback;
}

/// The span in us of `call` (a function returning whether its launches succeeded) between two
/// events on the default stream, after a device synchronisation; negative where the call or the
/// synchronisation failed (the error printed).
template <class Call>
double event_span_us(cudaEvent_t start, cudaEvent_t stop, Call&& call) {
  cudaEventRecord(start);
  if (!call()) return -1.0;
  cudaEventRecord(stop);
  if (!ok(cudaDeviceSynchronize(), "call")) return -1.0;
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  return ms * 1000.0;
}

/// The mean span in us of `launch()` (launches on the default stream) over `reps` back-to-back
/// launches, after one launch that is not timed.
template <class Launch>
double mean_launch_us(int reps, Launch&& launch) {
  launch();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < reps; ++i) launch();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1000.0 * ms / reps;
}

/// The upper median of `v`; 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace micro
