// Micro-benchmark: what cold instruction fetch costs a kernel whose code runs about once, the
// suspected half of a small GDN prefill call (knowledge/gdn.toml, prefill_small_shape_route). Two
// kernels of ~128 KB of straight-line SASS each (8192 FMAs in eight independent chains, which the
// compiler cannot merge) run one CTA of 4 warps per SM. Each kernel times its own body with
// %globaltimer (entry to exit of the slowest CTA). Cases, each after a 256 MiB L2 flush:
//   cold   the kernel right after the other one (its code gone from the SMs' instruction caches
//          and, through the flush, from L2)
//   warm   the kernel right after itself (instruction caches warm; L2 flushed)
//   short  a kernel of the same work as a rolled loop (a few hundred bytes of code)
// Prints one JSON object; the median of kReps launches per case.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "micro_common.cuh"

namespace {

using micro::now_ns;
using micro::ok;

constexpr int kReps = 21;
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;

// Eight independent chains, so a warp issues about one FMA per cycle and the fetch, not the FMA
// latency, sets the pace.
#define FMA1(r, c) asm volatile("fma.rn.f32 %0, %0, %1, " #c ";" : "+f"(r) : "f"(y));
#define FMA8(c) \
  FMA1(x0, c) FMA1(x1, c) FMA1(x2, c) FMA1(x3, c) FMA1(x4, c) FMA1(x5, c) FMA1(x6, c) FMA1(x7, c)
#define FMA64(c) FMA8(c) FMA8(c) FMA8(c) FMA8(c) FMA8(c) FMA8(c) FMA8(c) FMA8(c)
#define FMA512(c) FMA64(c) FMA64(c) FMA64(c) FMA64(c) FMA64(c) FMA64(c) FMA64(c) FMA64(c)
#define FMA8192(c) \
  FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) \
  FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c) FMA512(c)

// Kernel A and B differ in their constant, so their code differs.
__global__ void straight_a(float* out, unsigned long long* elapsed) {
  const unsigned long long start = now_ns();
  float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5,
        x6 = x0 + 6, x7 = x0 + 7, y = 0.999f;
  FMA8192(0f3f000000)
  const float x = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  __syncthreads();
  if (threadIdx.x == 0) elapsed[blockIdx.x] = now_ns() - start;
  if (x == 12345.0f) out[threadIdx.x] = x;  // keeps the chain alive
}

__global__ void straight_b(float* out, unsigned long long* elapsed) {
  const unsigned long long start = now_ns();
  float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5,
        x6 = x0 + 6, x7 = x0 + 7, y = 0.998f;
  FMA8192(0f3e800000)
  const float x = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  __syncthreads();
  if (threadIdx.x == 0) elapsed[blockIdx.x] = now_ns() - start;
  if (x == 12345.0f) out[threadIdx.x] = x;
}

__global__ void rolled(float* out, unsigned long long* elapsed, int n) {
  const unsigned long long start = now_ns();
  float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5,
        x6 = x0 + 6, x7 = x0 + 7, y = 0.999f;
  for (int i = 0; i < n; i += 8) { FMA8(0f3f000000) }
  const float x = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  __syncthreads();
  if (threadIdx.x == 0) elapsed[blockIdx.x] = now_ns() - start;
  if (x == 12345.0f) out[threadIdx.x] = x;
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  void* flush = nullptr;
  float* out = nullptr;
  unsigned long long* elapsed = nullptr;
  if (!ok(cudaMalloc(&flush, kFlushBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&out, 4096), "cudaMalloc") ||
      !ok(cudaMalloc(&elapsed, sizeof(unsigned long long) * sms), "cudaMalloc"))
    return 1;
  std::vector<unsigned long long> host(sms);
  auto slowest_us = [&]() {
    cudaMemcpy(host.data(), elapsed, sizeof(unsigned long long) * sms, cudaMemcpyDeviceToHost);
    return *std::max_element(host.begin(), host.end()) / 1000.0;
  };
  auto flush_l2 = [&] {
    cudaMemsetAsync(flush, 0, kFlushBytes);
    cudaDeviceSynchronize();
  };
  enum Kernel { kA, kB, kRolled };
  auto launch = [&](Kernel k) {
    if (k == kA) straight_a<<<sms, 128>>>(out, elapsed);
    if (k == kB) straight_b<<<sms, 128>>>(out, elapsed);
    if (k == kRolled) rolled<<<sms, 128>>>(out, elapsed, 8192);
    return ok(cudaDeviceSynchronize(), "kernel");
  };
  // Each case: `before` runs first (untimed), then an L2 flush, then the timed kernel.
  struct Case { const char* name; Kernel before, timed; };
  const Case cases[] = {{"cold", kB, kA}, {"warm", kA, kA}, {"short", kRolled, kRolled}};
  std::printf("{\"gpu\": \"%s\", \"method\": \"%%globaltimer in the kernel, slowest of %d CTAs "
              "(one per SM, 4 warps), median of %d launches, each after a %zu MiB L2 flush\", "
              "\"fmas_per_thread\": 8192, \"cases\": [\n",
              prop.name, sms, kReps, kFlushBytes >> 20);
  bool first = true;
  for (const Case& c : cases) {
    std::vector<double> us;
    for (int rep = 0; rep < kReps; ++rep) {
      if (!launch(c.before)) return 1;
      flush_l2();
      if (!launch(c.timed)) return 1;
      us.push_back(slowest_us());
    }
    std::sort(us.begin(), us.end());
    std::printf("%s  {\"case\": \"%s\", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f}",
                first ? "" : ",\n", c.name, us[us.size() / 2], us.front(), us.back());
    first = false;
  }
  std::printf("\n]}\n");
  return 0;
}
