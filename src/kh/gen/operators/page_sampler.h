// Draws of distinct page ids and distinct positions, shared by the paged-cache generators.
#pragma once

#include <cstdint>
#include <vector>

#include "kh/gen/random_stream.h"

namespace kh {

/// `count` distinct values from [0, universe) in random order (partial Fisher-Yates), using
/// stream elements [first, first + count).
std::vector<std::int64_t> sample_distinct(const RandomStream& s, std::int64_t first,
                                          std::int64_t universe, std::int64_t count);

}  // namespace kh
