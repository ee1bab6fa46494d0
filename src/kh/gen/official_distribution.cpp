#include "kh/gen/official_distribution.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "kh/gen/official_value.h"

namespace kh {
namespace {

// Below this many elements threads cost more than they save.
constexpr std::int64_t kParallelThreshold = 1 << 16;
constexpr unsigned kMaxThreads = 32;

}  // namespace

void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body) {
  const unsigned hw = std::max(1u, std::min(kMaxThreads, std::thread::hardware_concurrency()));
  if (n < kParallelThreshold || hw == 1) {
    body(0, n);
    return;
  }
  // Chunks are multiples of 64 elements so packed sub-byte types never share a byte across threads.
  const std::int64_t chunk = ((n + hw - 1) / hw + 63) / 64 * 64;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < hw; ++t) {
    const std::int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) threads.emplace_back(body, b, e);
  }
  for (auto& th : threads) th.join();
}

void fill_official(HostTensor& tensor, const RandomStream& stream, std::int64_t begin,
                   std::int64_t end) {
  const DType t = tensor.dtype();
  parallel_for(end - begin, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = begin + b; i < begin + e; ++i)
      tensor.set(i, official_random_value(stream, t, i));
  });
}

}  // namespace kh
