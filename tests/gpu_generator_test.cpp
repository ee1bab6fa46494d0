// The GPU generator gives the host generator's bits (label `gpu`; skipped without a device).
#include <gtest/gtest.h>

#include "kh/gen/device_fill.h"
#include "kh/gen/official_distribution.h"
#include "kh/gen/stream_key.h"
#include "kh/run/memory_backend.h"

namespace kh {
namespace {

TEST(GpuGenerator, OfficialDistributionsMatchTheHostBitForBit) {
  std::unique_ptr<MemoryBackend> gpu;
  try {
    gpu = make_cuda_backend(0);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no CUDA device: GPU test skipped (" << e.what() << ")";
  }
  constexpr std::int64_t n = 1'000'003;  // odd: the last packed fp4 byte holds one element
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const RandomStream stream = make_stream(kDefaultSeed, "gpu-generator", 3, dtype_name(t));
    HostTensor host(t, {n});
    fill_official(host, stream, 0, n);
    void* device = gpu->allocate(host.nbytes());
    fill_official_on_device(device, t, n, stream, gpu->stream());
    gpu->synchronize();
    HostTensor back(t, {n});
    gpu->download(back.bytes(), device, back.nbytes());
    gpu->release(device);
    EXPECT_TRUE(back.bytes_equal(host));
  }
}

}  // namespace
}  // namespace kh
