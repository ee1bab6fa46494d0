// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Element i of a tensor is a pure function of (key, i), so any slice of
// any tensor can be drawn independently, in any order, on the host or on the GPU, with the same
// bits.
#pragma once

#include <cstdint>

#include "kh/core/host_device.h"

namespace kh {

struct PhiloxKey {
  std::uint32_t k0;
  std::uint32_t k1;
};

struct PhiloxBlock {
  std::uint32_t w[4];
};

KH_HD PhiloxBlock philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2,
                                std::uint32_t c3, PhiloxKey key) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  std::uint32_t k0 = key.k0, k1 = key.k1;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c2;
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32),
                        lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32),
                        lo1 = static_cast<std::uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

}  // namespace kh
