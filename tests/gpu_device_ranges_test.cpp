// The device's reductions over byte ranges (run/cuda/device_ranges.cu) and its pattern fill at
// any alignment, against the cpu backend (label `gpu`; skipped without a device): more ranges
// than one launch takes, odd sizes, empty ranges; the first changed range is the right one.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kh/run/memory_backend.h"
#include "test_support.h"

namespace kh {
namespace {

TEST(DeviceRanges, DigestsAreTheHostsAndTheFirstChangedRangeIsFound) {
  KH_REQUIRE_GPU();
  const auto gpu = make_cuda_backend(0);
  const auto cpu = make_cpu_backend();
  std::mt19937 rng(3);
  const std::size_t total = 1 << 20;
  std::vector<unsigned char> host(total);
  for (auto& b : host) b = static_cast<unsigned char>(rng());
  void* device = gpu->allocate(total);
  gpu->upload(device, host.data(), total);
  std::vector<ByteRange> on_host, on_device;
  std::size_t at = 0;
  for (int i = 0; i < 150; ++i) {  // more than one launch's 64 ranges
    const std::size_t bytes = i % 17 == 0 ? 0 : 1 + rng() % 5000;
    on_host.push_back({host.data() + at, bytes});
    on_device.push_back({static_cast<unsigned char*>(device) + at, bytes});
    at += bytes + rng() % 7;
  }
  ASSERT_LT(at, total);
  EXPECT_EQ(gpu->digests(on_device), cpu->digests(on_host));

  std::vector<ByteRange> zones;
  for (int i = 0; i < 100; ++i)
    zones.push_back({static_cast<unsigned char*>(device) + 600 * i, 512});
  const unsigned char canary = 0xA5;
  gpu->fill(device, 600 * 100, &canary, 1);
  EXPECT_EQ(gpu->first_changed_range(zones, canary), std::nullopt);
  const unsigned char zero = 0;
  gpu->upload(static_cast<unsigned char*>(device) + 600 * 77 + 511, &zero, 1);
  gpu->upload(static_cast<unsigned char*>(device) + 600 * 90, &zero, 1);
  EXPECT_EQ(gpu->first_changed_range(zones, canary), std::optional<std::size_t>(77));
  gpu->release(device);
}

TEST(DeviceRanges, FillWritesThePatternAtAnyAlignment) {
  KH_REQUIRE_GPU();
  const auto gpu = make_cuda_backend(0);
  const unsigned char pattern[2] = {0xc0, 0x7f};
  for (const std::size_t offset : {0u, 1u, 3u, 6u}) {
    const std::size_t bytes = 2 * 1001 + (offset % 2 ? 0 : 2);
    std::vector<unsigned char> back(bytes + 32, 0x11);
    auto* p = static_cast<unsigned char*>(gpu->allocate(bytes + 32));
    gpu->upload(p, back.data(), back.size());
    gpu->fill(p + offset, bytes, pattern, 2);
    gpu->download(back.data(), p, back.size());
    gpu->release(p);
    for (std::size_t i = 0; i < offset; ++i) ASSERT_EQ(back[i], 0x11) << "offset " << offset;
    for (std::size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(back[offset + i], pattern[i % 2]) << "offset " << offset << " byte " << i;
    EXPECT_EQ(back[offset + bytes], 0x11) << "offset " << offset << ": wrote past the end";
  }
}

}  // namespace
}  // namespace kh
