// Micro-benchmark: what a grid-wide barrier costs on the GPU, the price of merging split results
// inside one kernel instead of in a second launch (kernels/dsa_attention/ROOFLINE.md). All CTAs
// of a cooperative launch (resident at once) time, with %globaltimer, a number of barriers, each
// optionally after every CTA wrote 32 KB (one DSA split's fp32 partial output: 16 heads x 512) to
// global memory. Two barriers: cooperative_groups' grid sync, and one atomic counter in device
// memory (release add, acquire polling). Prints one JSON object; the best of kReps launches per
// case, the slowest CTA of a launch.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "micro_common.cuh"

namespace {

using micro::now_ns;
using micro::ok;

constexpr int kThreads = 128;
constexpr int kPartialFloats = 16 * 512;  // 32 KB
constexpr int kMaxCtas = 132;
constexpr int kReps = 5;

// Barrier `round` (1, 2, ...) of a counter that all CTAs add 1 to once per round.
__device__ void counter_barrier(unsigned* counter, unsigned round) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned seen;
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < gridDim.x * round);
  }
  __syncthreads();
}

__global__ void barriers(bool use_cg, int rounds, bool write, float* partials, unsigned* counter,
                         unsigned long long* elapsed) {
  __syncthreads();
  const unsigned long long start = now_ns();
  for (int r = 1; r <= rounds; ++r) {
    if (write)
      for (int i = threadIdx.x; i < kPartialFloats; i += blockDim.x)
        __stcg(&partials[blockIdx.x * kPartialFloats + i], static_cast<float>(r));
    if (use_cg)
      cooperative_groups::this_grid().sync();
    else
      counter_barrier(counter, r);
  }
  if (threadIdx.x == 0) elapsed[blockIdx.x] = now_ns() - start;
}

}  // namespace

int main() {
  float* partials = nullptr;
  unsigned* counter = nullptr;
  unsigned long long* elapsed = nullptr;
  if (!ok(cudaMalloc(&partials, sizeof(float) * kMaxCtas * kPartialFloats), "cudaMalloc") ||
      !ok(cudaMalloc(&counter, sizeof(unsigned)), "cudaMalloc") ||
      !ok(cudaMalloc(&elapsed, sizeof(unsigned long long) * kMaxCtas), "cudaMalloc"))
    return 1;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("{\"gpu\": \"%s\", \"cuda_driver_api\": %d, \"method\": \"%%globaltimer in the "
              "kernel, slowest CTA, best of %d cooperative launches\", \"cases\": [\n",
              prop.name, driver, kReps);
  bool first = true;
  for (int ctas : {16, 128})
    for (bool use_cg : {true, false})
      for (bool write : {false, true})
        for (int rounds : {1, 20}) {
          unsigned long long best = ~0ull;
          for (int rep = 0; rep < kReps; ++rep) {
            cudaMemset(counter, 0, sizeof(unsigned));
            void* args[] = {&use_cg, &rounds, &write, &partials, &counter, &elapsed};
            if (!ok(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(barriers), ctas, kThreads,
                                                args, 0, nullptr),
                    "launch") ||
                !ok(cudaDeviceSynchronize(), "barriers"))
              return 1;
            unsigned long long host[kMaxCtas];
            cudaMemcpy(host, elapsed, sizeof(unsigned long long) * ctas, cudaMemcpyDeviceToHost);
            unsigned long long slowest = 0;
            for (int b = 0; b < ctas; ++b) slowest = host[b] > slowest ? host[b] : slowest;
            best = slowest < best ? slowest : best;
          }
          std::printf("%s  {\"ctas\": %d, \"barrier\": \"%s\", \"writes_32kb_per_cta\": %s, "
                      "\"rounds\": %d, \"us_per_barrier\": %.3f}",
                      first ? "" : ",\n", ctas, use_cg ? "cooperative_groups" : "atomic_counter",
                      write ? "true" : "false", rounds, best / 1000.0 / rounds);
          first = false;
        }
  std::printf("\n]}\n");
  return 0;
}
