// Runs a GPU reference on the device: a for_each is one grid-stride kernel launch on the
// caller's stream whose threads each call the functor. Deliberately plain: the references are
// the oracle, so clarity wins over speed (they still beat a CPU reference by orders of magnitude).
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "kh/core/error.h"

namespace kh::gpuref {

namespace detail {
template <class F>
__global__ void for_each_kernel(F f, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    f(i);
}
}  // namespace detail

class DeviceExecutor {
 public:
  static constexpr int kThreads = 128;
  static constexpr std::int64_t kMaxBlocks = 1 << 20;

  explicit DeviceExecutor(void* stream) : stream_(static_cast<cudaStream_t>(stream)) {}
  ~DeviceExecutor() {
    for (void* p : scratch_) cudaFreeAsync(p, stream_);
  }
  DeviceExecutor(const DeviceExecutor&) = delete;
  DeviceExecutor& operator=(const DeviceExecutor&) = delete;

  template <class F>
  void for_each(std::int64_t n, const F& f) {
    if (n <= 0) return;
    const std::int64_t blocks = std::min<std::int64_t>(kMaxBlocks, (n + kThreads - 1) / kThreads);
    detail::for_each_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream_>>>(f, n);
    check(cudaGetLastError(), "kernel launch");
  }

  void* scratch(std::size_t bytes) {
    void* p = nullptr;
    check(cudaMallocAsync(&p, bytes ? bytes : 1, stream_), "scratch allocation");
    scratch_.push_back(p);
    check(cudaMemsetAsync(p, 0, bytes, stream_), "scratch zeroing");
    return p;
  }

 private:
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) fail("GPU reference: {} failed: {}", what, cudaGetErrorString(e));
  }

  cudaStream_t stream_;
  std::vector<void*> scratch_;
};

}  // namespace kh::gpuref
