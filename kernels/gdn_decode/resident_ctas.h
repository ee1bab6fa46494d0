// How many CTAs of a kernel the current device runs at once (SMs x CTAs per SM at the kernel's
// register and thread use): the grid of a striding launch. Asked of the runtime once per device and
// kernel and remembered; the query neither synchronises nor touches a stream, so a call that
// makes it can still be captured in a CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace khk::gdn_decode {

/// 0 when the runtime cannot say (the caller then launches one CTA per tile). A failed query
/// is remembered too, and its error cleared, so that the launch after it reports only its own.
template <auto kKernel>
int64_t resident_ctas(int threads_per_cta) {
  constexpr int kMaxDevices = 64;
  constexpr int64_t kUnknown = 0, kUnavailable = -1;
  static std::atomic<int64_t> known[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    cudaGetLastError();
    return 0;
  }
  int64_t ctas = known[device].load(std::memory_order_relaxed);
  if (ctas != kUnknown) return ctas == kUnavailable ? 0 : ctas;
  int sms = 0, per_sm = 0;
  const bool answered =
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, threads_per_cta, 0) ==
          cudaSuccess &&
      sms > 0 && per_sm > 0;
  if (!answered) cudaGetLastError();
  ctas = answered ? int64_t{sms} * per_sm : kUnavailable;
  known[device].store(ctas, std::memory_order_relaxed);
  return answered ? ctas : 0;
}

}  // namespace khk::gdn_decode
