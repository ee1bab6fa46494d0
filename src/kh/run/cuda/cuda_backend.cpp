// The cuda backend: tensors in device memory, candidates launched on a stream the harness owns.
// Built only when the CUDA toolkit is present; kh links the static runtime, which finds the driver
// with dlopen at run time, so kh still starts on a machine without a GPU driver.
#include <cuda_runtime_api.h>

#include "kh/core/error.h"
#include "kh/run/cuda/device_ranges.h"
#include "kh/run/cuda/device_screen.h"
#include "kh/run/memory_backend.h"

namespace kh {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    fail("cuda backend: {} failed: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

class CudaBackend final : public MemoryBackend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaBackend() override { cudaStreamDestroy(stream_); }

  std::string name() const override { return "cuda"; }
  DLDevice device() const override { return {kDLCUDA, device_}; }
  void* stream() override { return stream_; }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "copy to device");
    check(cudaStreamSynchronize(stream_), "copy to device");
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "copy to host");
    check(cudaStreamSynchronize(stream_), "copy to host");
  }
  void zero(void* dst, std::size_t bytes) override {
    check(cudaMemsetAsync(dst, 0, bytes, stream_), "memset");
  }
  void fill(void* dst, std::size_t bytes, const void* pattern, std::size_t pattern_bytes) override {
    device_fill_pattern(dst, bytes, pattern, pattern_bytes, stream_);
  }
  std::vector<std::uint64_t> digests(const std::vector<ByteRange>& ranges) override {
    return device_digests(ranges, stream_);
  }
  std::optional<std::size_t> first_changed_range(const std::vector<ByteRange>& ranges,
                                                 unsigned char value) override {
    const std::size_t i = device_first_changed_range(ranges, value, stream_);
    return i < ranges.size() ? std::optional(i) : std::nullopt;
  }
  std::optional<ElementScreen> screen(const void* solution, const void* reference, DType dtype,
                                      std::int64_t numel, float atol, float rtol) override {
    return device_screen(solution, reference, dtype, numel, atol, rtol, stream_);
  }
  void synchronize() override {
    check(cudaGetLastError(), "kernel launch");
    check(cudaStreamSynchronize(stream_), "the candidate's work");
  }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

int visible_cuda_devices() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  return cudaGetDeviceProperties(&prop, device) == cudaSuccess ? std::string(prop.name) : "";
}

std::unique_ptr<MemoryBackend> make_cuda_backend(int device) {
  return std::make_unique<CudaBackend>(device);
}

}  // namespace kh
