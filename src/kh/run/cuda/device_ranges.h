// Reductions over many byte ranges of device memory in one launch and one synchronisation: their
// digests (core/digest.h), and the canary check of red zones. A strict call checks ~10 inputs'
// digests and ~25 red zones; one synchronised copy each cost about a millisecond per call, more
// than the kernels of a small workload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kh/run/byte_range.h"

namespace kh {

/// The digest of each range, on `cuda_stream` (synchronises it).
std::vector<std::uint64_t> device_digests(const std::vector<ByteRange>& ranges, void* cuda_stream);

/// The index of the first range holding a byte other than `value`, or ranges.size() if none, on
/// `cuda_stream` (synchronises it).
std::size_t device_first_changed_range(const std::vector<ByteRange>& ranges, unsigned char value,
                                       void* cuda_stream);

}  // namespace kh
