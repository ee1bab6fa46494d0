// The token-serial route's staging: a block of kSerialBlock tokens of one (sequence, head) moves
// from global memory into registers (while the previous block runs), then into shared memory as
// fp32 k and q, the CTA's v values, the gates g and beta, and per reduction round the dot
// products k_i . q_j (i <= j) and k_i . k_j (i > j) of its tokens. Written against a `Cta`
// object like token_serial_cta.h, so the host emulation runs it too.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gdn_prefill.cuh"
#include "serial_tuning.h"

#if defined(__CUDACC__)
#define KHK_SERIAL_FN __device__ __forceinline__
#define KHK_UNROLL _Pragma("unroll")
#else  // the host compiler of the emulation tests
#define KHK_SERIAL_FN inline
#define KHK_UNROLL
#endif

namespace khk::gdn_prefill {

constexpr int kSerialRowsPerWarp = 32 / kSerialLanes;
constexpr int kSerialVecs = kHeadSize / 4 / kSerialLanes;  // float4s of a row per lane
constexpr int kSerialThreads = 32 * kSerialWarps;
constexpr int kSerialRows = kSerialRowsPerWarp * kSerialWarps;  // value rows per CTA
constexpr int kSerialTilesPerHead = kHeadSize / kSerialRows;    // CTAs per (sequence, head)
constexpr int kSerialRounds = kSerialBlock / kSerialRound;      // reduction rounds per block
constexpr int kSerialPairs = kSerialRound * kSerialRound;       // in-round dot products
// k and q move in pieces of 8 bf16 (16 bytes), 16 per token. A staging unit is one piece index
// of the R tokens of one round: its thread holds all it needs for the round's partial dots.
constexpr int kSerialPieces = kHeadSize / 8;
constexpr int kSerialUnits = kSerialRounds * kSerialPieces;
constexpr int kSerialUnitsPerThread = (kSerialUnits + kSerialThreads - 1) / kSerialThreads;
constexpr int kSerialVValues = kSerialBlock * kSerialRows;  // the CTA's v values of a block
constexpr int kSerialVPerThread = (kSerialVValues + kSerialThreads - 1) / kSerialThreads;
constexpr float kSerialSoftplusThreshold = 20.0f;  // torch's softplus is linear above this

static_assert(kSerialThreads >= kSerialBlock, "one thread per token computes the gates");
static_assert(kHeadSize % kSerialRows == 0, "the rows of a head split evenly into CTAs");

/// One block of staged tokens. pair[round][i * R + j] is k_i . q_j for i <= j and k_i . k_j for
/// i > j, tokens i, j of the round.
struct SerialStage {
  float k[kSerialBlock][kHeadSize];
  float q[kSerialBlock][kHeadSize];
  float v[kSerialBlock][kSerialRows];
  float2 gates[kSerialBlock];  // g, beta
  float pair[kSerialRounds][kSerialPairs];
};

/// Shared memory of one CTA: two stages (the current block and the next) and the per-piece
/// partial sums of the pair dot products of the block being staged.
struct SerialSmem {
  SerialStage stage[2];
  float pair_part[kSerialRounds][kSerialPairs][kSerialPieces];
};

/// The raw inputs of the next block, held in registers while the current block runs.
struct SerialPrefetch {
  uint4 k[kSerialUnitsPerThread][kSerialRound], q[kSerialUnitsPerThread][kSerialRound];
  float v[kSerialVPerThread];
  float a, b;
};

KHK_SERIAL_FN float bf16_bits_to_float(uint32_t bits16_in_high_half) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits16_in_high_half);
#else
  float f;
  std::memcpy(&f, &bits16_in_high_half, sizeof f);
  return f;
#endif
}

/// Eight bf16 (16 bytes, lowest address first) as floats.
KHK_SERIAL_FN void unpack_bf16x8(const uint4& raw, float out[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  KHK_UNROLL
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = bf16_bits_to_float(w[i] << 16);
    out[2 * i + 1] = bf16_bits_to_float(w[i] & 0xffff0000u);
  }
}

KHK_SERIAL_FN uint4 load_16_bytes(const void* p) { return *reinterpret_cast<const uint4*>(p); }

/// The raw inputs of the `count` tokens from token `t0` (count <= kSerialBlock) into registers;
/// tokens past `count` read as zeros, so their k, q and dot products are zero.
KHK_SERIAL_FN void prefetch_block(const PrefillArgs& args, int tid, int64_t t0, int count, int h,
                                  int row0, SerialPrefetch& pf) {
  const int qk = h / kGvaRatio;
  KHK_UNROLL
  for (int u = 0; u < kSerialUnitsPerThread; ++u) {
    const int unit = tid + u * kSerialThreads;
    const int round = unit / kSerialPieces, piece = unit % kSerialPieces;
    KHK_UNROLL
    for (int i = 0; i < kSerialRound; ++i) {
      const int token = round * kSerialRound + i;
      pf.k[u][i] = pf.q[u][i] = make_uint4(0, 0, 0, 0);
      if (unit < kSerialUnits && token < count) {
        const int64_t at = ((t0 + token) * kQKHeads + qk) * kHeadSize + piece * 8;
        pf.k[u][i] = load_16_bytes(args.k + at);
        pf.q[u][i] = load_16_bytes(args.q + at);
      }
    }
  }
  KHK_UNROLL
  for (int n = 0; n < kSerialVPerThread; ++n) {  // consecutive threads, consecutive rows
    const int idx = tid + n * kSerialThreads;
    const int token = idx / kSerialRows, r = idx % kSerialRows;
    pf.v[n] = idx < kSerialVValues && token < count
                  ? __bfloat162float(args.v[((t0 + token) * kVHeads + h) * kHeadSize + row0 + r])
                  : 0.0f;
  }
  pf.a = pf.b = 0.0f;
  if (tid < count) {
    pf.a = __bfloat162float(args.a[(t0 + tid) * kVHeads + h]);
    pf.b = __bfloat162float(args.b[(t0 + tid) * kVHeads + h]);
  }
}

/// Converts a prefetched block into `stage`. Two barriers; every thread of the CTA calls it.
template <class Cta>
KHK_SERIAL_FN void stage_block(Cta& cta, SerialSmem& smem, SerialStage& stage,
                               const SerialPrefetch& pf, float exp_A_log, float dt_bias) {
  const int tid = cta.thread();
  KHK_UNROLL
  for (int u = 0; u < kSerialUnitsPerThread; ++u) {
    const int unit = tid + u * kSerialThreads;
    if (unit >= kSerialUnits) continue;
    const int round = unit / kSerialPieces, piece = unit % kSerialPieces;
    float k[kSerialRound][8], q[kSerialRound][8];
    KHK_UNROLL
    for (int i = 0; i < kSerialRound; ++i) {
      unpack_bf16x8(pf.k[u][i], k[i]);
      unpack_bf16x8(pf.q[u][i], q[i]);
      const int token = round * kSerialRound + i;
      KHK_UNROLL
      for (int e = 0; e < 8; ++e) {
        stage.k[token][piece * 8 + e] = k[i][e];
        stage.q[token][piece * 8 + e] = q[i][e];
      }
    }
    KHK_UNROLL
    for (int p = 0; p < kSerialPairs; ++p) {
      const int i = p / kSerialRound, j = p % kSerialRound;
      float dot = 0.0f;
      KHK_UNROLL
      for (int e = 0; e < 8; ++e) dot += k[i][e] * (i <= j ? q[j][e] : k[j][e]);
      smem.pair_part[round][p][piece] = dot;
    }
  }
  KHK_UNROLL
  for (int n = 0; n < kSerialVPerThread; ++n) {
    const int idx = tid + n * kSerialThreads;
    if (idx < kSerialVValues) stage.v[idx / kSerialRows][idx % kSerialRows] = pf.v[n];
  }
  cta.sync();
  for (int s = tid; s < kSerialRounds * kSerialPairs; s += kSerialThreads) {
    const int round = s / kSerialPairs, p = s % kSerialPairs;
    float dot = 0.0f;
    KHK_UNROLL
    for (int piece = 0; piece < kSerialPieces; ++piece) dot += smem.pair_part[round][p][piece];
    stage.pair[round][p] = dot;
  }
  if (tid < kSerialBlock) {
    const float x = pf.a + dt_bias;
    const float softplus = x > kSerialSoftplusThreshold ? x : log1pf(expf(x));
    stage.gates[tid] = make_float2(expf(-exp_A_log * softplus), 1.0f / (1.0f + expf(-pf.b)));
  }
  cta.sync();
}

}  // namespace khk::gdn_prefill
