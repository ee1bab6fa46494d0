// The values the tensor cores read from their operand registers, and where an A fragment's
// registers lie in its tile, for the host forms of mma.sync (cuda_on_host.cpp) and wgmma
// (wgmma_on_host.cpp).
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

/// Places lane `lane`'s A fragment registers of a 16-row tile (PTX ISA, "Matrix fragments for
/// mma.m16n8k16", bf16) into A, rows `stride` floats apart: with g = lane / 4, c = lane % 4,
/// rows g / g + 8 at columns 2c, 2c + 1 (registers 0 / 1) and 2c + 8, 2c + 9 (registers 2 / 3).
inline void place_a_fragment_bf16(const uint32_t (&r)[4], int lane, float* A, int stride) {
  const int g = lane / 4, c = lane % 4;
  for (int h = 0; h < 2; ++h) {
    A[g * stride + 2 * c + h] = bf16_at(r[0], h);
    A[(g + 8) * stride + 2 * c + h] = bf16_at(r[1], h);
    A[g * stride + 2 * c + 8 + h] = bf16_at(r[2], h);
    A[(g + 8) * stride + 2 * c + 8 + h] = bf16_at(r[3], h);
  }
}

/// The same for mma.m16n8k8's tf32 A fragment: rows g / g + 8 at columns c and c + 4.
inline void place_a_fragment_tf32(const uint32_t (&r)[4], int lane, float* A, int stride) {
  const int g = lane / 4, c = lane % 4;
  A[g * stride + c] = tf32_value(r[0]);
  A[(g + 8) * stride + c] = tf32_value(r[1]);
  A[g * stride + c + 4] = tf32_value(r[2]);
  A[(g + 8) * stride + c + 4] = tf32_value(r[3]);
}

}  // namespace khk_host
