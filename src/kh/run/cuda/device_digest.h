// The digest (core/digest.h) of a device byte range, computed on the device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kh {

/// Digest of `bytes` bytes at device address `data`, on `cuda_stream`; synchronises it.
std::uint64_t device_digest(const void* data, std::size_t bytes, void* cuda_stream);

}  // namespace kh
