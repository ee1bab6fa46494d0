// Runs a GPU reference on the host: every "thread" of a for_each is a call of the same functor,
// spread over the cores. The tests use it to check the GPU references' arithmetic against the
// fp64 CPU references on machines without a GPU; the device executor runs the very same code.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kh/gen/official_distribution.h"

namespace kh::gpuref {

class HostExecutor {
 public:
  /// Calls f(i) for every i in [0, n); calls must be independent of each other.
  template <class F>
  void for_each(std::int64_t n, const F& f) {
    parallel_for(n, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) f(i);
    });
  }

  /// Zero-initialised scratch memory that lives as long as the executor.
  void* scratch(std::size_t bytes) {
    scratch_.push_back(std::make_unique<unsigned char[]>(bytes ? bytes : 1));
    std::memset(scratch_.back().get(), 0, bytes);
    return scratch_.back().get();
  }

 private:
  std::vector<std::unique_ptr<unsigned char[]>> scratch_;
};

}  // namespace kh::gpuref
