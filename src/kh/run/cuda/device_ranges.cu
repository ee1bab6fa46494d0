#include "kh/run/cuda/device_ranges.h"

#include <algorithm>

#include <cuda_runtime_api.h>

#include "kh/core/digest.h"
#include "kh/core/error.h"

namespace kh {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocksPerRange = 1024;
constexpr int kRangesPerLaunch = 64;  // the table travels as a kernel parameter (1 KB)

struct RangeTable {
  const unsigned char* data[kRangesPerLaunch];
  unsigned long long bytes[kRangesPerLaunch];
};

// Range blockIdx.y: per-thread sums of its words' digest terms, one atomic per warp.
__global__ void digests_kernel(RangeTable table, unsigned long long* sums) {
  const unsigned char* p = table.data[blockIdx.y];
  const std::size_t bytes = table.bytes[blockIdx.y];
  const std::size_t words = (bytes + 7) / 8;
  std::uint64_t local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += digest_term(digest_word(p, bytes, i), i);
  for (int offset = 16; offset > 0; offset /= 2)
    local += __shfl_down_sync(0xffffffffu, local, offset);
  if (threadIdx.x % 32 == 0 && local) atomicAdd(&sums[blockIdx.y], local);
}

// Range blockIdx.y: the smallest range index with a byte other than `value`.
__global__ void first_changed_kernel(RangeTable table, unsigned first, unsigned char value,
                                     unsigned* result) {
  const unsigned char* p = table.data[blockIdx.y];
  const std::size_t bytes = table.bytes[blockIdx.y];
  bool changed = false;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    changed |= p[i] != value;
  if (changed) atomicMin(result, first + blockIdx.y);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("device range check: {} failed: {}", what, cudaGetErrorString(e));
}

// Calls launch(table, first index, count, blocks per range) for each run of up to
// kRangesPerLaunch ranges.
template <typename Launch>
void for_each_table(const std::vector<ByteRange>& ranges, std::size_t unit, Launch&& launch) {
  for (std::size_t first = 0; first < ranges.size(); first += kRangesPerLaunch) {
    const std::size_t count = std::min<std::size_t>(kRangesPerLaunch, ranges.size() - first);
    RangeTable table{};
    std::size_t most = 1;
    for (std::size_t i = 0; i < count; ++i) {
      table.data[i] = static_cast<const unsigned char*>(ranges[first + i].data);
      table.bytes[i] = ranges[first + i].bytes;
      most = std::max(most, (ranges[first + i].bytes + unit - 1) / unit);
    }
    const auto blocks =
        static_cast<unsigned>(std::min(kMaxBlocksPerRange, (most + kThreads - 1) / kThreads));
    launch(table, first, count, blocks);
  }
}

}  // namespace

std::vector<std::uint64_t> device_digests(const std::vector<ByteRange>& ranges, void* cuda_stream) {
  std::vector<std::uint64_t> result(ranges.size(), 0);
  if (ranges.empty()) return result;
  auto stream = static_cast<cudaStream_t>(cuda_stream);
  unsigned long long* sums = nullptr;
  const std::size_t bytes = ranges.size() * sizeof *sums;
  check(cudaMallocAsync(&sums, bytes, stream), "allocation");
  check(cudaMemsetAsync(sums, 0, bytes, stream), "memset");
  for_each_table(
      ranges, 8,
      [&](const RangeTable& table, std::size_t first, std::size_t count, unsigned blocks) {
        digests_kernel<<<dim3(blocks, static_cast<unsigned>(count)), kThreads, 0, stream>>>(
            table, sums + first);
      });
  check(cudaGetLastError(), "launch");
  check(cudaMemcpyAsync(result.data(), sums, bytes, cudaMemcpyDeviceToHost, stream), "copy");
  check(cudaFreeAsync(sums, stream), "free");
  check(cudaStreamSynchronize(stream), "synchronisation");
  return result;
}

std::size_t device_first_changed_range(const std::vector<ByteRange>& ranges, unsigned char value,
                                       void* cuda_stream) {
  if (ranges.empty()) return 0;
  auto stream = static_cast<cudaStream_t>(cuda_stream);
  unsigned* found = nullptr;
  check(cudaMallocAsync(&found, sizeof *found, stream), "allocation");
  check(cudaMemsetAsync(found, 0xff, sizeof *found, stream), "memset");
  for_each_table(
      ranges, 1,
      [&](const RangeTable& table, std::size_t first, std::size_t count, unsigned blocks) {
        first_changed_kernel<<<dim3(blocks, static_cast<unsigned>(count)), kThreads, 0, stream>>>(
            table, static_cast<unsigned>(first), value, found);
      });
  check(cudaGetLastError(), "launch");
  unsigned index = 0;
  check(cudaMemcpyAsync(&index, found, sizeof index, cudaMemcpyDeviceToHost, stream), "copy");
  check(cudaFreeAsync(found, stream), "free");
  check(cudaStreamSynchronize(stream), "synchronisation");
  return std::min<std::size_t>(index, ranges.size());
}

}  // namespace kh
