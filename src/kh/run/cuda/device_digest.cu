#include <cuda_runtime_api.h>

#include "kh/core/digest.h"
#include "kh/core/error.h"
#include "kh/run/cuda/device_digest.h"

namespace kh {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;

__global__ void digest_kernel(const unsigned char* p, std::size_t bytes, unsigned long long* sum) {
  const std::size_t words = (bytes + 7) / 8;
  std::uint64_t local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += digest_term(digest_word(p, bytes, i), i);
  atomicAdd(sum, static_cast<unsigned long long>(local));
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("input digest: {} failed: {}", what, cudaGetErrorString(e));
}

}  // namespace

std::uint64_t device_digest(const void* data, std::size_t bytes, void* cuda_stream) {
  auto stream = static_cast<cudaStream_t>(cuda_stream);
  unsigned long long* sum = nullptr;
  check(cudaMallocAsync(&sum, sizeof *sum, stream), "allocation");
  check(cudaMemsetAsync(sum, 0, sizeof *sum, stream), "memset");
  const std::size_t words = (bytes + 7) / 8;
  const std::size_t blocks = std::min(kMaxBlocks, (words + kThreads - 1) / kThreads);
  if (blocks)
    digest_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const unsigned char*>(data), bytes, sum);
  check(cudaGetLastError(), "launch");
  unsigned long long result = 0;
  check(cudaMemcpyAsync(&result, sum, sizeof result, cudaMemcpyDeviceToHost, stream), "copy");
  check(cudaFreeAsync(sum, stream), "free");
  check(cudaStreamSynchronize(stream), "synchronisation");
  return result;
}

}  // namespace kh
