// The interleaved timer the paired gate uses (label `gpu`; skipped without a device): two calls
// of very different cost, timed alternately on one stream, each get their own samples under every
// method, and cupti checks each call's activity set among its own iterations only (the two calls
// differ, which a single-call timer would call an inconsistent activity set).
#include <algorithm>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/gpu/call_timer.h"
#include "test_support.h"

#if KH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kh {
namespace {

#if KH_HAVE_CUDA
constexpr std::size_t kSmallBytes = std::size_t{1} << 20;
constexpr std::size_t kLargeBytes = std::size_t{256} << 20;
constexpr int kPairs = 12;

double median_seconds(const TrialTiming& t) {
  std::vector<double> s;
  for (const auto& x : t.samples) s.push_back(x.seconds);
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

TEST(GpuInterleavedTimer, EachCallGetsItsOwnSamplesUnderEveryMethod) {
  KH_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, kLargeBytes), cudaSuccess);
  {
    CallTimer timer(0, stream);
    auto fill = [&](std::size_t bytes) {
      return CallTimer::Call([=](std::string&) {
        return cudaMemsetAsync(buffer, 1, bytes, stream) == cudaSuccess ? 0 : 1;
      });
    };
    std::vector<int> order;
    for (int i = 0; i < kPairs; ++i) {  // A B, B A, A B, ...: both orders within a pair
      order.push_back(i % 2);
      order.push_back(1 - i % 2);
    }
    for (TimingMethod method :
         {TimingMethod::kCupti, TimingMethod::kEvents, TimingMethod::kGraph}) {
      const auto r =
          timer.time_interleaved(method, 2, {fill(kSmallBytes), fill(kLargeBytes)}, order);
      ASSERT_EQ(r.size(), 2u);
      for (const auto& t : r) {
        ASSERT_TRUE(t.ok()) << timing_method_name(method) << ": " << t.error;
        EXPECT_EQ(t.samples.size(), static_cast<std::size_t>(kPairs));
      }
      // 256 MiB against 1 MiB: the large fill takes far longer whatever the launch overhead.
      EXPECT_GT(median_seconds(r[1]), 5 * median_seconds(r[0])) << timing_method_name(method);
    }
    EXPECT_THROW(timer.time_interleaved(TimingMethod::kEvents, 0, {fill(kSmallBytes)}, {0, 1}),
                 Error);
  }
  cudaFree(buffer);
  cudaStreamDestroy(stream);
}
#endif

}  // namespace
}  // namespace kh
