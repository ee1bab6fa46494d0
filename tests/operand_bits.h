// The values the tensor cores read from their operand registers, for the host forms of mma.sync
// (cuda_on_host.cpp) and wgmma (wgmma_on_host.cpp).
#pragma once

#include <cstdint>
#include <cstring>

namespace khk_host {

/// Half `half` (0: the low 16 bits) of a register holding two bf16 values.
inline float bf16_at(uint32_t packed, int half) {
  const uint32_t bits = half ? packed & 0xffff0000u : packed << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// A tf32 operand: the tensor cores read 19 bits; the low 13 are ignored.
inline float tf32_value(uint32_t bits) {
  bits &= 0xffffe000u;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace khk_host
