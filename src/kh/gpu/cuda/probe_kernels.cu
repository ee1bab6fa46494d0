#include "kh/gpu/cuda/probe_kernels.h"

namespace kh::probe {
namespace {

constexpr int kCopyThreads = 512;
constexpr int kCopyBlocksPerSm = 4;
constexpr int kFmaThreads = 256;
constexpr int kFmaBlocksPerSm = 8;
constexpr int kFmaChains = 8;  // independent accumulators per thread: hides FMA latency
constexpr int kFmaIterations = 4096;

__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void empty_kernel() {}

__global__ void gather_chain_kernel(const std::uint32_t* __restrict__ table, int hops,
                                    std::uint32_t* end) {
  std::uint32_t i = 0;
  for (int h = 0; h < hops; ++h) i = table[i];
  *end = i;
}

__global__ void fma_kernel(float* sink) {
  float a[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) a[c] = threadIdx.x * 1e-3f + c;
  const float x = 0.999f, y = 1e-3f;
  for (int i = 0; i < kFmaIterations; ++i)
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) a[c] = fmaf(a[c], x, y);
  float s = 0;
  for (int c = 0; c < kFmaChains; ++c) s += a[c];
  if (s == 12345.0f) sink[0] = s;  // never true; keeps the work alive
}

}  // namespace

void launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  copy_kernel<<<sms * kCopyBlocksPerSm, kCopyThreads, 0, stream>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / sizeof(uint4));
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
}

void launch_gather_chain(const std::uint32_t* table, int hops, std::uint32_t* end,
                         cudaStream_t stream) {
  gather_chain_kernel<<<1, 1, 0, stream>>>(table, hops, end);
}

double launch_fma(float* sink, int sm_count, cudaStream_t stream) {
  const int blocks = sm_count * kFmaBlocksPerSm;
  fma_kernel<<<blocks, kFmaThreads, 0, stream>>>(sink);
  return 2.0 * kFmaChains * kFmaIterations * static_cast<double>(blocks) * kFmaThreads;
}

}  // namespace kh::probe
