// The warpgroup MMA layout cases of wgmma_cases.h on the hardware (label `gpu`; skipped without an
// sm_90 device): each case's operands placed by its formulas and read through its descriptors
// must give its expected product. cta_emulator_wgmma_test.cpp runs the same cases on the host
// emulation (bit for bit), so together they tie the emulation that checks wgmma kernels without a
// GPU to what the tensor cores read.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "wgmma_cases.h"

namespace kh::test {
namespace {

namespace wc = wgmma_cases;
constexpr int kThreads = 128;
constexpr int kMaxSteps = 4;

struct Launch {
  uint64_t desc_a[kMaxSteps], desc_b[kMaxSteps];  // relative to the operands' shared base
  int steps;
};

// One variant per instruction form the cases use (immediates are part of the instruction).
template <int kType, int kTrans, int kScaleA, bool kRegs>
__global__ void __launch_bounds__(kThreads)
    run_case(const uint4* image, Launch launch, const uint32_t* a_regs, float* out) {
  extern __shared__ __align__(1024) unsigned char raw[];
  const uint32_t raw_address = static_cast<uint32_t>(__cvta_generic_to_shared(raw));
  const uint32_t base = (raw_address + 1023u) & ~1023u;
  unsigned char* smem = raw + (base - raw_address);
  for (uint32_t i = threadIdx.x; i < wc::kSmemBytes / 16; i += kThreads)
    reinterpret_cast<uint4*>(smem)[i] = image[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[8] = {};
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int s = 0; s < launch.steps; ++s) {
    const uint64_t b = launch.desc_b[s] + (base >> 4);
    const int acc = s > 0;
    if constexpr (kRegs) {
      const uint32_t* r = a_regs + (s * kThreads + threadIdx.x) * 4;
      if constexpr (kType == wc::kBf16)
        asm volatile(
            "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
            " wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, "
            "%7}, {%8, %9, %10, %11}, %12, p, %14, 1, %15;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7])
            : "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "l"(b), "r"(acc), "n"(kScaleA),
              "n"(kTrans));
      else
        asm volatile(
            "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
            " wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, "
            "%7}, {%8, %9, %10, %11}, %12, p, %14, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7])
            : "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "l"(b), "r"(acc), "n"(kScaleA));
    } else {
      const uint64_t a = launch.desc_a[s] + (base >> 4);
      if constexpr (kType == wc::kBf16)
        asm volatile(
            "{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"
            " wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, "
            "%7}, %8, %9, p, %11, 1, %12, %12;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7])
            : "l"(a), "l"(b), "r"(acc), "n"(kScaleA), "n"(kTrans));
      else
        asm volatile(
            "{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"
            " wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, "
            "%7}, %8, %9, p, %11, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7])
            : "l"(a), "l"(b), "r"(acc), "n"(kScaleA));
    }
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < 8; ++i) out[threadIdx.x * 8 + i] = d[i];  // placed in D on the host
}

using Kernel = void (*)(const uint4*, Launch, const uint32_t*, float*);

// The variant for a case; null when no variant is instantiated for its form. Transposes are
// given for both operands alike (the cases transpose both or neither).
Kernel kernel_for(const wc::Case& c) {
  if (c.trans_a != c.trans_b && !c.a_in_registers) return nullptr;
  const bool trans = c.trans_b;
  if (c.type == wc::kBf16 && !c.a_in_registers && c.scale_a == 1)
    return trans ? run_case<wc::kBf16, 1, 1, false> : run_case<wc::kBf16, 0, 1, false>;
  if (c.type == wc::kTf32 && !c.a_in_registers && !trans)
    return c.scale_a == 1 ? run_case<wc::kTf32, 0, 1, false> : run_case<wc::kTf32, 0, -1, false>;
  if (c.type == wc::kBf16 && c.a_in_registers && !trans && c.scale_a == 1)
    return run_case<wc::kBf16, 0, 1, true>;
  if (c.type == wc::kTf32 && c.a_in_registers && !trans && c.scale_a == 1)
    return run_case<wc::kTf32, 0, 1, true>;
  return nullptr;
}

// Whether device 0 runs wgmma (sm_90); false without a device or driver.
bool have_sm90() {
  int count = 0;
  cudaDeviceProp prop{};
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0 &&
         cudaGetDeviceProperties(&prop, 0) == cudaSuccess && prop.major == 9;
}

class WgmmaLayoutOnGpu : public ::testing::TestWithParam<std::size_t> {};

TEST_P(WgmmaLayoutOnGpu, MatchesTheProduct) {
  if (!have_sm90()) GTEST_SKIP() << "no sm_90 CUDA device: GPU test skipped";
  const wc::Case& c = wc::cases()[GetParam()];
  const Kernel kernel = kernel_for(c);
  ASSERT_NE(kernel, nullptr) << c.name << ": no kernel variant for this instruction form";
  ASSERT_LE(c.steps, kMaxSteps);

  Launch launch{};
  launch.steps = c.steps;
  std::vector<uint32_t> regs(static_cast<std::size_t>(c.steps * kThreads * 4));
  for (int s = 0; s < c.steps; ++s) {
    launch.desc_a[s] = c.a_in_registers ? 0 : c.desc_a(s);
    launch.desc_b[s] = c.desc_b(s);
    if (c.a_in_registers)
      for (int t = 0; t < kThreads; ++t) {
        uint32_t r[4];
        wc::a_registers(c, t, s, r);
        for (int i = 0; i < 4; ++i)
          regs[static_cast<std::size_t>((s * kThreads + t) * 4 + i)] = r[i];
      }
  }
  const std::vector<unsigned char> image = wc::shared_image(c);
  uint4* d_image = nullptr;
  uint32_t* d_regs = nullptr;
  float* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_image, image.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_regs, regs.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, wc::kM * wc::kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_image, image.data(), image.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_regs, regs.data(), regs.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const int smem = static_cast<int>(wc::kSmemBytes) + 1024;
  ASSERT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
            cudaSuccess);
  kernel<<<1, kThreads, smem>>>(d_image, launch, d_regs, d_out);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.name;
  std::vector<float> fragments(wc::kM * wc::kN), got(wc::kM * wc::kN);
  ASSERT_EQ(cudaMemcpy(fragments.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < wc::kN / 2; ++i)
      got[static_cast<std::size_t>(wc::fragment_index(t, i))] =
          fragments[static_cast<std::size_t>(t * 8 + i)];
  cudaFree(d_image);
  cudaFree(d_regs);
  cudaFree(d_out);

  // The tensor cores' own summation order and rounding: within 2^-20 of the sum of |products| (a
  // wrong layout pairs other values and misses by about the products' size).
  const std::vector<float> want = wc::expected(c);
  int wrong = 0;
  for (int m = 0; m < wc::kM; ++m)
    for (int n = 0; n < wc::kN; ++n) {
      double bound = 0.0;
      for (int k = 0; k < c.k(); ++k)
        bound +=
            std::fabs(static_cast<double>(wc::value(0, m, k, c.type)) * wc::value(1, n, k, c.type));
      const std::size_t i = static_cast<std::size_t>(m * wc::kN + n);
      if (!(std::fabs(got[i] - want[i]) <= bound * 0x1p-20 + 1e-6) && ++wrong <= 5)
        ADD_FAILURE() << c.name << ": D[" << m << "][" << n << "] = " << got[i] << ", expected "
                      << want[i];
    }
  EXPECT_EQ(wrong, 0) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, WgmmaLayoutOnGpu,
                         ::testing::Range(std::size_t{0}, wc::cases().size()),
                         [](const auto& info) {
                           return std::string(wc::cases()[info.param].name);
                         });

}  // namespace
}  // namespace kh::test
