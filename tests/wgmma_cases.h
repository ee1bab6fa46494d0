// Warpgroup MMA cases that both the host emulation (cta_emulator_wgmma_test.cpp) and the GPU
// (gpu_wgmma_layouts_test.cu) run: each places its operands in shared memory by its own formula
// (the swizzles written as per-row permutations of 16-byte chunks, not as address bits), gives
// the descriptors of each k-step, and has one expected result. The GPU test shows the formulas
// and descriptors are what the hardware reads; the host test shows the emulation reads the same,
// so a kernel checked on the emulation is checked against the hardware's layouts.
// M = 64, N = 16; A's operand starts at shared offset 0, B's at kCaseOffsetB; descriptors are
// relative to offset 0 (the GPU adds its shared base).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace kh::test::wgmma_cases {

constexpr int kM = 64, kN = 16;
constexpr uint32_t kOffsetB = 8192;
constexpr uint32_t kSmemBytes = 16384;
constexpr int kBf16 = 0, kTf32 = 1;  // khk_host::WgmmaType

struct Case {
  const char* name;
  int type;
  bool trans_a, trans_b, a_in_registers;
  int steps;    // k-steps: 16 bf16 or 8 tf32 values each
  int scale_a;  // imm-scale-a: 1 or -1
  uint32_t (*place_a)(int m, int k);
  uint32_t (*place_b)(int n, int k);
  uint64_t (*desc_a)(int step);  // unused with A in registers
  uint64_t (*desc_b)(int step);
  int k() const { return steps * (type == kTf32 ? 8 : 16); }
};

inline uint64_t descriptor(uint32_t start, uint32_t leading, uint32_t stride, int swizzle_mode) {
  return static_cast<uint64_t>(start >> 4) | static_cast<uint64_t>(leading >> 4) << 16 |
         static_cast<uint64_t>(stride >> 4) << 32 | static_cast<uint64_t>(swizzle_mode) << 62;
}

// K-major rows of `line` bytes, 8-row groups 8 lines apart, row r's 16-byte chunks in the order
// chunk ^ perm(r % 8); `bytes` per element.
template <int kBytes, int kLine>
uint32_t k_major(int r, int k) {
  const int chunk = k * kBytes / 16, within = k * kBytes % 16, i = r % 8;
  const int perm = kLine == 128 ? i : kLine == 64 ? i / 2 : kLine == 32 ? i / 4 : 0;
  return static_cast<uint32_t>(r / 8 * 8 * kLine + i * kLine + (chunk ^ perm) * 16 + within);
}
// Without swizzle: 8 x 16-byte core matrices, the two along K 128 bytes apart, 8-row groups 256.
inline uint32_t core_matrices(int r, int k) {
  return static_cast<uint32_t>(r / 8 * 256 + k / 8 * 128 + r % 8 * 16 + k % 8 * 2);
}
// M-major in the 64-byte swizzle: atoms of 32 M values 2048 bytes apart; in each, K index k is a
// 64-byte line (8-line groups 512 bytes apart), chunks permuted by k / 2.
inline uint32_t m_major_sw64(int m, int k) {
  return static_cast<uint32_t>(m / 32 * 2048 + k / 8 * 512 + k % 8 * 64 +
                               ((m % 32 / 8) ^ (k % 8 / 2)) * 16 + m % 8 * 2);
}
// N-major in the 128-byte swizzle: 16 N values per 128-byte line per K index (8-line groups 1024
// bytes apart), chunks permuted by k.
inline uint32_t n_major_sw128(int n, int k) {
  return static_cast<uint32_t>(k / 8 * 1024 + k % 8 * 128 + ((n / 8) ^ (k % 8)) * 16 + n % 8 * 2);
}

template <uint32_t kBase, int kLine, int kMode>
uint64_t k_major_desc(int step) {  // 32 bytes further along the line each step
  return descriptor(kBase + 32u * static_cast<uint32_t>(step), 16, 8 * kLine, kMode);
}
inline uint64_t core_desc_a(int) {
  return descriptor(0, 128, 256, 0);
}
inline uint64_t core_desc_b(int) {
  return descriptor(kOffsetB, 128, 256, 0);
}
inline uint64_t m_major_sw64_desc(int step) {  // 16 K lines (two groups) further each step
  return descriptor(1024u * static_cast<uint32_t>(step), 2048, 512, 2);
}
inline uint64_t n_major_sw128_desc(int step) {
  return descriptor(kOffsetB + 2048u * static_cast<uint32_t>(step), 4096, 1024, 1);
}

inline const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"bf16_k_major_sw128_4_steps", kBf16, false, false, false, 4, 1, k_major<2, 128>,
       k_major<2, 128>, k_major_desc<0, 128, 1>, k_major_desc<kOffsetB, 128, 1>},
      {"tf32_k_major_sw128_negated", kTf32, false, false, false, 1, -1, k_major<4, 128>,
       k_major<4, 128>, k_major_desc<0, 128, 1>, k_major_desc<kOffsetB, 128, 1>},
      {"bf16_k_major_sw64", kBf16, false, false, false, 1, 1, k_major<2, 64>, k_major<2, 64>,
       k_major_desc<0, 64, 2>, k_major_desc<kOffsetB, 64, 2>},
      {"bf16_k_major_sw32", kBf16, false, false, false, 1, 1, k_major<2, 32>, k_major<2, 32>,
       k_major_desc<0, 32, 3>, k_major_desc<kOffsetB, 32, 3>},
      {"bf16_k_major_no_swizzle", kBf16, false, false, false, 1, 1, core_matrices, core_matrices,
       core_desc_a, core_desc_b},
      {"bf16_mn_major_2_steps", kBf16, true, true, false, 2, 1, m_major_sw64, n_major_sw128,
       m_major_sw64_desc, n_major_sw128_desc},
      {"bf16_a_in_registers", kBf16, false, false, true, 2, 1, k_major<2, 128>, k_major<2, 128>,
       nullptr, k_major_desc<kOffsetB, 128, 1>},
      {"tf32_a_in_registers", kTf32, false, false, true, 2, 1, k_major<4, 128>, k_major<4, 128>,
       nullptr, k_major_desc<kOffsetB, 128, 1>},
  };
  return all;
}

// Operand values: exactly representable in the case's type, a fixed hash of (operand, row, k).
inline float value(int operand, int r, int k, int type) {
  uint32_t h = static_cast<uint32_t>(operand * 7919 + r * 131 + k * 17 + 12345);
  h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
  const float x = static_cast<float>(static_cast<int>(h % 2001) - 1000) / 257.0f;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= type == kTf32 ? 0xffffe000u : 0xffff0000u;
  float y;
  std::memcpy(&y, &bits, sizeof y);
  return y;
}

// The shared-memory image: A then B at their places, zeros elsewhere.
inline std::vector<unsigned char> shared_image(const Case& c) {
  std::vector<unsigned char> image(kSmemBytes, 0);
  const int bytes = c.type == kTf32 ? 4 : 2;
  auto put = [&](uint32_t off, float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if (bytes == 2) bits >>= 16;
    std::memcpy(image.data() + off, &bits, static_cast<std::size_t>(bytes));
  };
  for (int k = 0; k < c.k(); ++k) {
    if (!c.a_in_registers)
      for (int m = 0; m < kM; ++m) put(c.place_a(m, k), value(0, m, k, c.type));
    for (int n = 0; n < kN; ++n) put(kOffsetB + c.place_b(n, k), value(1, n, k, c.type));
  }
  return image;
}

// Thread t's A registers for k-step `step` (A in registers): mma.m16n8k16's (bf16) or
// mma.m16n8k8's (tf32) A fragment of rows 16 (t / 32 % 4) .. + 15.
inline void a_registers(const Case& c, int thread, int step, uint32_t (&r)[4]) {
  const int lane = thread % 32, row = 16 * (thread / 32 % 4) + lane / 4, q = lane % 4;
  auto bits = [&](int m, int k) {
    uint32_t b;
    const float x = value(0, m, k, c.type);
    std::memcpy(&b, &x, sizeof b);
    return b;
  };
  if (c.type == kTf32) {
    const int k0 = 8 * step;
    r[0] = bits(row, k0 + q), r[1] = bits(row + 8, k0 + q);
    r[2] = bits(row, k0 + q + 4), r[3] = bits(row + 8, k0 + q + 4);
  } else {
    const int k0 = 16 * step;
    auto pair = [&](int m, int k) { return bits(m, k) >> 16 | (bits(m, k + 1) & 0xffff0000u); };
    r[0] = pair(row, k0 + 2 * q), r[1] = pair(row + 8, k0 + 2 * q);
    r[2] = pair(row, k0 + 2 * q + 8), r[3] = pair(row + 8, k0 + 2 * q + 8);
  }
}

// D = scale_a A B^T, rounded to fp32 after each k-step as the instruction does; [64][16].
inline std::vector<float> expected(const Case& c) {
  std::vector<float> D(kM * kN, 0.0f);
  const int per_step = c.k() / c.steps;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n)
      for (int s = 0; s < c.steps; ++s) {
        double sum = 0.0;
        for (int k = s * per_step; k < (s + 1) * per_step; ++k)
          sum += static_cast<double>(value(0, m, k, c.type)) * value(1, n, k, c.type);
        float& d = D[static_cast<std::size_t>(m * kN + n)];
        d = static_cast<float>(d + c.scale_a * sum);
      }
  return D;
}

// Where thread t's accumulator element i (of kN / 2) lies in D [64][16].
inline int fragment_index(int thread, int i) {
  const int lane = thread % 32;
  const int row = 16 * (thread / 32 % 4) + lane / 4 + 8 * (i % 4 / 2);
  const int col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
  return row * kN + col;
}

}  // namespace kh::test::wgmma_cases
