#include "kh/run/cuda/device_screen.h"

#include <algorithm>
#include <cstring>

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "kh/core/error.h"

namespace kh {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 2048;

// The official rel denominator adds 1e-8 in float32 (element_rule.cpp).
constexpr float kRelativeEpsilon = 1e-8f;

enum class Kind { kFloat32, kFloat16, kBFloat16 };

template <Kind K>
__device__ float element(const void* p, std::int64_t i) {
  if constexpr (K == Kind::kFloat32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (K == Kind::kFloat16) {
    return __half2float(static_cast<const __half*>(p)[i]);
  } else {
    return __uint_as_float(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(p)[i])
                           << 16);
  }
}

struct Sums {
  unsigned long long fails;
  int max_abs_bits;  // non-negative floats order like their bit patterns
  int max_rel_bits;
  int non_finite;
};

// check_tensor's arithmetic element by element (the default IEEE division and no contraction,
// so the errors are the host's bits); per-thread sums, a warp reduction, then one atomic each.
template <Kind K>
__global__ void screen_kernel(const void* solution, const void* reference, std::int64_t n,
                              float atol, float rtol, Sums* sums) {
  unsigned long long fails = 0;
  int max_abs = 0, max_rel = 0, non_finite = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    const float x = element<K>(solution, i);
    const float y = element<K>(reference, i);
    non_finite |= (__float_as_int(x) & 0x7f800000) == 0x7f800000;
    const float abs_error = fabsf(__fsub_rn(x, y));
    const float rel_error = __fdiv_rn(abs_error, __fadd_rn(fabsf(y), kRelativeEpsilon));
    fails += (abs_error > atol) & (rel_error > rtol);
    if (abs_error == abs_error) max_abs = max(max_abs, __float_as_int(abs_error));
    if (rel_error == rel_error) max_rel = max(max_rel, __float_as_int(rel_error));
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    fails += __shfl_down_sync(0xffffffffu, fails, offset);
    max_abs = max(max_abs, __shfl_down_sync(0xffffffffu, max_abs, offset));
    max_rel = max(max_rel, __shfl_down_sync(0xffffffffu, max_rel, offset));
    non_finite |= __shfl_down_sync(0xffffffffu, non_finite, offset);
  }
  if (threadIdx.x % 32 != 0) return;
  if (fails) atomicAdd(&sums->fails, fails);
  if (max_abs) atomicMax(&sums->max_abs_bits, max_abs);
  if (max_rel) atomicMax(&sums->max_rel_bits, max_rel);
  if (non_finite) atomicOr(&sums->non_finite, 1);
}

// Bytes [0, head) and [head + 8 * words, head + 8 * words + tail) of dst from `pattern` (its
// byte j at offset j), the words between as `word` (already in the pattern's phase at `head`).
__global__ void fill_kernel(unsigned char* dst, std::size_t head, std::size_t words,
                            std::size_t tail, unsigned long long word, unsigned long long pattern,
                            unsigned pattern_bytes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  auto* aligned = reinterpret_cast<unsigned long long*>(dst + head);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride)
    aligned[i] = word;
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  auto byte_at = [&](std::size_t offset) {
    return static_cast<unsigned char>(pattern >> (8 * (offset % pattern_bytes)));
  };
  for (std::size_t j = 0; j < head; ++j) dst[j] = byte_at(j);
  for (std::size_t j = head + 8 * words; j < head + 8 * words + tail; ++j) dst[j] = byte_at(j);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("device screen: {} failed: {}", what, cudaGetErrorString(e));
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

}  // namespace

std::optional<ElementScreen> device_screen(const void* solution, const void* reference, DType dtype,
                                           std::int64_t numel, float atol, float rtol,
                                           void* cuda_stream) {
  auto stream = static_cast<cudaStream_t>(cuda_stream);
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16)
    return std::nullopt;
  Sums* sums = nullptr;
  check(cudaMallocAsync(&sums, sizeof *sums, stream), "allocation");
  check(cudaMemsetAsync(sums, 0, sizeof *sums, stream), "memset");
  if (numel > 0) {
    const unsigned blocks = blocks_for(numel);
    if (dtype == DType::kFloat32)
      screen_kernel<Kind::kFloat32>
          <<<blocks, kThreads, 0, stream>>>(solution, reference, numel, atol, rtol, sums);
    else if (dtype == DType::kFloat16)
      screen_kernel<Kind::kFloat16>
          <<<blocks, kThreads, 0, stream>>>(solution, reference, numel, atol, rtol, sums);
    else
      screen_kernel<Kind::kBFloat16>
          <<<blocks, kThreads, 0, stream>>>(solution, reference, numel, atol, rtol, sums);
  }
  check(cudaGetLastError(), "launch");
  Sums host{};
  check(cudaMemcpyAsync(&host, sums, sizeof host, cudaMemcpyDeviceToHost, stream), "copy");
  check(cudaFreeAsync(sums, stream), "free");
  check(cudaStreamSynchronize(stream), "synchronisation");
  ElementScreen result;
  result.fails = static_cast<std::int64_t>(host.fails);
  std::memcpy(&result.max_absolute_error, &host.max_abs_bits, sizeof(float));
  std::memcpy(&result.max_relative_error, &host.max_rel_bits, sizeof(float));
  result.non_finite = host.non_finite != 0;
  return result;
}

void device_fill_pattern(void* dst, std::size_t bytes, const void* pattern,
                         std::size_t pattern_bytes, void* cuda_stream) {
  if (pattern_bytes == 0 || 8 % pattern_bytes != 0)
    fail("device fill: a pattern of {} bytes does not tile an 8-byte word", pattern_bytes);
  if (bytes == 0) return;
  // The pattern repeated over an 8-byte word, starting at its byte `phase`.
  auto repeated = [&](std::size_t phase) {
    unsigned long long w = 0;
    for (std::size_t b = 0; b < 8; ++b)
      w |= static_cast<unsigned long long>(
               static_cast<const unsigned char*>(pattern)[(phase + b) % pattern_bytes])
           << (8 * b);
    return w;
  };
  // Bytes up to the first 8-byte boundary, whole words, then the rest. A red zone after an
  // output of odd size starts anywhere.
  const auto address = reinterpret_cast<std::uintptr_t>(dst);
  const std::size_t head = std::min<std::size_t>(bytes, (8 - address % 8) % 8);
  const std::size_t words = (bytes - head) / 8;
  const std::size_t tail = bytes - head - 8 * words;
  const unsigned long long bits = repeated(0), word = repeated(head);
  const unsigned blocks = blocks_for(static_cast<std::int64_t>(std::max<std::size_t>(1, words)));
  fill_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(
      static_cast<unsigned char*>(dst), head, words, tail, word, bits,
      static_cast<unsigned>(pattern_bytes));
  check(cudaGetLastError(), "launch");
}

}  // namespace kh
