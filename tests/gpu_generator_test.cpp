// The GPU generator gives the host generator's bits (label `gpu`; skipped without a device).
#include <gtest/gtest.h>

#include <cstring>

#include "kh/core/error.h"
#include "kh/gen/device_fill.h"
#include "kh/gen/input_generator.h"
#include "kh/gen/official_distribution.h"
#include "kh/gen/stream_key.h"
#include "kh/run/call_buffers.h"
#include "kh/run/call_inputs.h"
#include "kh/run/memory_backend.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

TEST(GpuGenerator, OfficialDistributionsMatchTheHostBitForBit) {
  KH_REQUIRE_GPU();
  const std::unique_ptr<MemoryBackend> gpu = make_cuda_backend(0);
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

// Every input a recipe describes, for every definition and variant: drawn on the device as the
// cuda backend draws it, it has the host generator's bits. Huge element-wise inputs (MoE weights)
// are compared on their first and last million elements.
TEST(GpuGenerator, EveryRecipeInputMatchesTheHostBitForBit) {
  KH_REQUIRE_GPU();
  const std::unique_ptr<MemoryBackend> gpu = make_cuda_backend(0);
  constexpr std::int64_t kWindow = 1'000'000;
  const Dataset dataset = Dataset::open(test::source_dir());
  for (const auto& [name, def] : dataset.definitions()) {
    std::vector<std::string> variants = {""};
    for (const auto& v : InputGenerator::variants(def)) variants.push_back(v.name);
    for (const auto& variant : variants) {
      // The first workload the variant applies to.
      for (const auto& w : dataset.workloads(name)) {
        const InputGenerator gen(def, w, test::source_dir(), {kDefaultSeed, variant});
        DrawnCallInputs drawn;
        try {
          drawn = generate_drawn_call_inputs(gen, 4);
        } catch (const Error&) {
          continue;
        }
        SCOPED_TRACE(name + " workload " + w.uuid + " variant '" + variant + "'");
        EXPECT_FALSE(drawn.draws.empty());
        CallBuffers buffers(*gpu, def, gen.axes(), drawn.host, 0, drawn.draws);
        for (const auto& [input, recipe] : drawn.draws) {
          SCOPED_TRACE("input " + input);
          const HostTensor device = buffers.download_input(input);
          HostTensor host(device.dtype(), device.shape());
          const std::int64_t n = host.numel();
          const bool windows = recipe.is_elementwise() && n > 64 * kWindow;
          if (!windows) {
            gen.fill_range(input, 4, host, 0, n);
            EXPECT_TRUE(device.bytes_equal(host));
            continue;
          }
          gen.fill_range(input, 4, host, 0, kWindow);
          gen.fill_range(input, 4, host, n - kWindow, n);
          const std::size_t element = dtype_size(host.dtype()), window = kWindow * element;
          EXPECT_EQ(std::memcmp(device.bytes(), host.bytes(), window), 0);
          EXPECT_EQ(std::memcmp(device.bytes() + host.nbytes() - window,
                                host.bytes() + host.nbytes() - window, window),
                    0);
        }
        break;
      }
    }
  }
}

}  // namespace
}  // namespace kh
