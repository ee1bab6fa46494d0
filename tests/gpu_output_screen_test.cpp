// The device's element screen and pattern fill (run/cuda/device_screen.cu) against the host's
// element rule (label `gpu`; skipped without a device): for every screened dtype, a tensor pair
// with small and large errors, NaN and infinite reference values and a zero reference gets the
// host's failing count and error maxima bit for bit, and a non-finite solution value is seen.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backend_doubles.h"
#include "kh/check/element_rule.h"
#include "kh/core/host_tensor.h"
#include "kh/run/memory_backend.h"
#include "test_support.h"

namespace kh {
namespace {

constexpr float kAtol = 1e-2f, kRtol = 1e-2f;

struct DeviceTensor {
  MemoryBackend& backend;
  void* data;
  DeviceTensor(MemoryBackend& b, const HostTensor& t) : backend(b), data(b.allocate(t.nbytes())) {
    b.upload(data, t.bytes(), t.nbytes());
  }
  ~DeviceTensor() { backend.release(data); }
};

// The element rule's sums over a pair on the host, as check_tensor computes them.
ElementScreen host_screen(const HostTensor& x, const HostTensor& y) {
  return test::host_element_screen(x.numel(), kAtol, kRtol, [&](std::int64_t i) {
    return std::pair{static_cast<float>(x.get(i)), static_cast<float>(y.get(i))};
  });
}

class DeviceScreen : public ::testing::TestWithParam<DType> {};

TEST_P(DeviceScreen, AgreesWithTheHostElementRuleBitForBit) {
  KH_REQUIRE_GPU();
  const auto gpu = make_cuda_backend(0);
  const DType dtype = GetParam();
  const std::int64_t n = 1'000'003;  // not a multiple of any block
  HostTensor reference(dtype, {n}), solution(dtype, {n});
  std::mt19937 rng(7);
  std::normal_distribution<float> value(0.0f, 2.0f), noise(0.0f, 0.004f);
  for (std::int64_t i = 0; i < n; ++i) {
    const float y = value(rng);
    reference.set(i, y);
    solution.set(i, y + (i % 9973 == 0 ? 0.5f : noise(rng)));  // a few beyond tolerance
  }
  reference.set(11, std::numeric_limits<float>::quiet_NaN());
  reference.set(12, std::numeric_limits<float>::infinity());
  reference.set(13, 0.0f);
  const DeviceTensor x(*gpu, solution), y(*gpu, reference);
  const auto screen = gpu->screen(x.data, y.data, dtype, n, kAtol, kRtol);
  ASSERT_TRUE(screen.has_value());
  const ElementScreen want = host_screen(solution, reference);
  EXPECT_GT(want.fails, 0);
  EXPECT_EQ(screen->fails, want.fails);
  EXPECT_EQ(screen->max_absolute_error, want.max_absolute_error);
  EXPECT_EQ(screen->max_relative_error, want.max_relative_error);
  EXPECT_FALSE(screen->non_finite);

  solution.set(n - 1, std::numeric_limits<float>::infinity());
  const DeviceTensor x2(*gpu, solution);
  EXPECT_TRUE(gpu->screen(x2.data, y.data, dtype, n, kAtol, kRtol)->non_finite);
}

INSTANTIATE_TEST_SUITE_P(ScreenedDTypes, DeviceScreen,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(DeviceScreen, LeavesOtherDTypesToTheHost) {
  KH_REQUIRE_GPU();
  const auto gpu = make_cuda_backend(0);
  void* p = gpu->allocate(64);
  EXPECT_EQ(gpu->screen(p, p, DType::kInt32, 16, kAtol, kRtol), std::nullopt);
  gpu->release(p);
}

TEST(DeviceFill, WritesThePatternToTheLastByte) {
  KH_REQUIRE_GPU();
  const auto gpu = make_cuda_backend(0);
  for (const std::size_t pattern_bytes : {1u, 2u, 4u, 8u}) {
    const std::size_t bytes = 1000 * 8 + 6 / pattern_bytes * pattern_bytes;  // a partial word
    std::vector<unsigned char> pattern(pattern_bytes), back(bytes + 8, 0x11);
    for (std::size_t i = 0; i < pattern_bytes; ++i)
      pattern[i] = static_cast<unsigned char>(0xc0 + i);
    void* p = gpu->allocate(bytes + 8);
    gpu->upload(p, back.data(), bytes + 8);
    gpu->fill(p, bytes, pattern.data(), pattern_bytes);
    gpu->download(back.data(), p, bytes + 8);
    gpu->release(p);
    for (std::size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(back[i], pattern[i % pattern_bytes])
          << pattern_bytes << "-byte pattern, byte " << i;
    EXPECT_EQ(back[bytes], 0x11) << "wrote past the end";
  }
}

}  // namespace
}  // namespace kh
