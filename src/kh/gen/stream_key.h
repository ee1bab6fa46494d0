// Keys of the random streams: one per (seed, workload uuid, trial, input name). Structural
// tensors (sequence lengths, block tables, sparse indices) use the trial-independent key, so
// they stay fixed across the trials of a workload as the official dataset's blobs do; every other
// input is drawn afresh per trial.
#pragma once

#include <cstdint>
#include <string_view>

#include "kh/gen/random_stream.h"

namespace kh {

inline constexpr std::uint64_t kDefaultSeed = 20260501;
inline constexpr std::int64_t kStructuralTrial = -1;

PhiloxKey derive_key(std::uint64_t seed, std::string_view workload_uuid, std::int64_t trial,
                     std::string_view input_name);

inline RandomStream make_stream(std::uint64_t seed, std::string_view workload_uuid,
                                std::int64_t trial, std::string_view input_name) {
  return RandomStream{derive_key(seed, workload_uuid, trial, input_name)};
}

}  // namespace kh
