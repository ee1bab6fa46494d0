// A byte range in a backend's memory (host or device), as the range checks take them. Plain
// C++17: the CUDA side (run/cuda/device_ranges.h) uses it too.
#pragma once

#include <cstddef>

namespace kh {

struct ByteRange {
  const void* data;
  std::size_t bytes;
};

}  // namespace kh
