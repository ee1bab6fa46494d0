// The token-serial route's program for one CTA, written once for the device kernel
// (route_token_serial.cuh) and for the host emulation the tests run it under
// (tests/cta_emulator.h): the CTA's thread index, barrier, lane exchange and shared memory come
// from a `Cta` object, so both run the same arithmetic and the same indexing.
//
// The route runs the reference's recurrence token by token, in fp32, with the state in registers.
// Every value row of a state evolves on its own (the delta rule mixes only the key dimension), so
// each row is a chain of T dependent steps and the rows run in parallel. With M = state[n, h] as
// [v][k] (k-last, like the tensors) and, per token, g and beta from the gates:
//   sk = row . k,  sq = row . q                          (both from the row before the update)
//   delta = beta (v_row - g sk)
//   row <- g row + delta k
//   out_row = scale (g sq + delta (k . q))               (= scale (row after the update) . q)
// which is the reference's update (old_v = k . g S, S <- g S + k (beta v + (1 - beta) old_v -
// old_v)) with one reduction round per token for both dot products.
//
// Lane layout (that of the decode route): 8 lanes per row, lane j holding the float4s j, j + 8,
// j + 16, j + 24 of the row, so a warp holds 4 rows and a row's dot products reduce over 8 lanes
// in 3 exchange steps. A CTA holds kSerialRows rows of one (sequence, head); its tokens' k, q
// (as fp32), v of its rows and gates are staged in shared memory a block of kSerialBlock tokens
// at a time, the next block's loads in flight while the current block runs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gdn_prefill.cuh"
#include "tuning.h"

#if defined(__CUDACC__)
#define KHK_SERIAL_FN __device__ __forceinline__
#define KHK_UNROLL _Pragma("unroll")
#else  // the host compiler of the emulation tests
#define KHK_SERIAL_FN inline
#define KHK_UNROLL
#endif

namespace khk::gdn_prefill {

constexpr int kSerialLanesPerRow = 8;
constexpr int kSerialRowsPerWarp = 32 / kSerialLanesPerRow;
constexpr int kSerialVecs = kHeadSize / 4 / kSerialLanesPerRow;  // float4s of a row per lane
constexpr int kSerialThreads = 32 * kSerialWarps;
constexpr int kSerialRows = kSerialRowsPerWarp * kSerialWarps;  // value rows per CTA
constexpr int kSerialTilesPerHead = kHeadSize / kSerialRows;    // CTAs per (sequence, head)
// k and q move in pieces of 8 bf16 (16 bytes): 16 pieces per token each.
constexpr int kSerialPiecesPerToken = kHeadSize / 8;
constexpr int kSerialPieces = kSerialBlock * kSerialPiecesPerToken;
constexpr int kSerialPiecesPerThread = (kSerialPieces + kSerialThreads - 1) / kSerialThreads;
constexpr int kSerialVPiecesPerToken = kSerialRows / 8;  // the CTA's v values of one token
constexpr int kSerialVPieces = kSerialBlock * kSerialVPiecesPerToken;
constexpr float kSerialSoftplusThreshold = 20.0f;  // torch's softplus is linear above this

static_assert(kSerialThreads >= kSerialBlock, "one thread per token computes the gates");
static_assert(kSerialThreads >= kSerialVPieces, "one v piece per thread");
static_assert(kHeadSize % kSerialRows == 0, "the rows of a head split evenly into CTAs");

/// One block of staged tokens.
struct SerialStage {
  float k[kSerialBlock][kHeadSize];
  float q[kSerialBlock][kHeadSize];
  float v[kSerialBlock][kSerialRows];
  float4 gates[kSerialBlock];  // g, beta, k . q, unused
};

/// Shared memory of one CTA: two stages (the current block and the next) and the partial k . q
/// sums of the block being staged.
struct SerialSmem {
  SerialStage stage[2];
  float kq_part[kSerialBlock][kSerialPiecesPerToken];
};

/// The raw inputs of the next block, held in registers while the current block runs.
struct SerialPrefetch {
  uint4 k[kSerialPiecesPerThread], q[kSerialPiecesPerThread];
  uint4 v;
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

// State rows move as 8-byte pairs: the entry guarantees state and new_state 8-byte alignment only.
KHK_SERIAL_FN float4 load_state4(const float* p) {
  const float2 lo = reinterpret_cast<const float2*>(p)[0], hi = reinterpret_cast<const float2*>(p)[1];
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}

KHK_SERIAL_FN void store_state4(float* p, const float4& v) {
#if defined(__CUDA_ARCH__)
  __stcg(reinterpret_cast<float2*>(p), make_float2(v.x, v.y));
  __stcg(reinterpret_cast<float2*>(p) + 1, make_float2(v.z, v.w));
#else
  p[0] = v.x, p[1] = v.y, p[2] = v.z, p[3] = v.w;
#endif
}

KHK_SERIAL_FN float dot4(const float4& a, const float4& b) {
  return (a.x * b.x + a.y * b.y) + (a.z * b.z + a.w * b.w);
}

/// The raw inputs of the `count` tokens from token `t0` (count <= kSerialBlock) into registers.
KHK_SERIAL_FN void prefetch_block(const PrefillArgs& args, int tid, int64_t t0, int count, int h,
                                  int row0, SerialPrefetch& pf) {
  const int qk = h / kGvaRatio;
KHK_UNROLL
  for (int p = 0; p < kSerialPiecesPerThread; ++p) {
    const int idx = tid + p * kSerialThreads;
    const int token = idx / kSerialPiecesPerToken, piece = idx % kSerialPiecesPerToken;
    pf.k[p] = pf.q[p] = make_uint4(0, 0, 0, 0);
    if (idx < kSerialPieces && token < count) {
      const int64_t at = ((t0 + token) * kQKHeads + qk) * kHeadSize + piece * 8;
      pf.k[p] = load_16_bytes(args.k + at);
      pf.q[p] = load_16_bytes(args.q + at);
    }
  }
  pf.v = make_uint4(0, 0, 0, 0);
  if (tid < kSerialVPieces) {
    const int token = tid / kSerialVPiecesPerToken, part = tid % kSerialVPiecesPerToken;
    if (token < count)
      pf.v = load_16_bytes(args.v + ((t0 + token) * kVHeads + h) * kHeadSize + row0 + part * 8);
  }
  pf.a = pf.b = 0.0f;
  if (tid < count) {
    pf.a = __bfloat162float(args.a[(t0 + tid) * kVHeads + h]);
    pf.b = __bfloat162float(args.b[(t0 + tid) * kVHeads + h]);
  }
}

/// Converts a prefetched block into `stage`: k and q as fp32, the CTA's v values, and per token
/// g, beta (in fp32 as the reference computes them) and k . q. Two barriers; every thread calls it.
template <class Cta>
KHK_SERIAL_FN void stage_block(Cta& cta, SerialSmem& smem, SerialStage& stage,
                               const SerialPrefetch& pf, float exp_A_log, float dt_bias) {
  const int tid = cta.thread();
KHK_UNROLL
  for (int p = 0; p < kSerialPiecesPerThread; ++p) {
    const int idx = tid + p * kSerialThreads;
    if (idx >= kSerialPieces) continue;
    const int token = idx / kSerialPiecesPerToken, piece = idx % kSerialPiecesPerToken;
    float k[8], q[8];
    unpack_bf16x8(pf.k[p], k);
    unpack_bf16x8(pf.q[p], q);
    float kq = 0.0f;
KHK_UNROLL
    for (int e = 0; e < 8; ++e) {
      stage.k[token][piece * 8 + e] = k[e];
      stage.q[token][piece * 8 + e] = q[e];
      kq += k[e] * q[e];
    }
    smem.kq_part[token][piece] = kq;
  }
  if (tid < kSerialVPieces) {
    const int token = tid / kSerialVPiecesPerToken, part = tid % kSerialVPiecesPerToken;
    float v[8];
    unpack_bf16x8(pf.v, v);
KHK_UNROLL
    for (int e = 0; e < 8; ++e) stage.v[token][part * 8 + e] = v[e];
  }
  cta.sync();
  if (tid < kSerialBlock) {
    float kq = 0.0f;
KHK_UNROLL
    for (int piece = 0; piece < kSerialPiecesPerToken; ++piece) kq += smem.kq_part[tid][piece];
    const float x = pf.a + dt_bias;
    const float softplus = x > kSerialSoftplusThreshold ? x : log1pf(expf(x));
    const float g = expf(-exp_A_log * softplus);
    const float beta = 1.0f / (1.0f + expf(-pf.b));
    stage.gates[tid] = make_float4(g, beta, kq, 0.0f);
  }
  cta.sync();
}

/// Sum over the 8 lanes of a row, for two values at once (their exchanges interleave).
template <class Cta>
KHK_SERIAL_FN void row_sums(Cta& cta, float& x, float& y) {
KHK_UNROLL
  for (int offset = kSerialLanesPerRow / 2; offset > 0; offset /= 2) {
    const float xo = cta.shfl_xor(x, offset);
    const float yo = cta.shfl_xor(y, offset);
    x += xo;
    y += yo;
  }
}

/// CTA `cta_index` = ((sequence * 8 + head) * kSerialTilesPerHead + tile): rows
/// tile * kSerialRows ... of that (sequence, head), over all of the sequence's tokens.
template <class Cta>
KHK_SERIAL_FN void token_serial_cta(const PrefillArgs& args, int64_t cta_index, Cta& cta) {
  SerialSmem& smem = *reinterpret_cast<SerialSmem*>(cta.smem);
  const int tid = cta.thread();
  const int lane = tid % 32, warp = tid / 32, col = lane % kSerialLanesPerRow;
  const int tile = static_cast<int>(cta_index % kSerialTilesPerHead);
  const int64_t head = cta_index / kSerialTilesPerHead;  // sequence * 8 + h
  const int h = static_cast<int>(head % kVHeads);
  const int64_t seq = head / kVHeads;
  const int row0 = tile * kSerialRows;
  const int row = row0 + warp * kSerialRowsPerWarp + lane / kSerialLanesPerRow;
  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const int64_t length = end > begin ? end - begin : 0;

  // The row, loaded first: its latency overlaps the first block's loads and staging. An empty
  // sequence leaves its state at zero whatever the initial state was, as the reference does.
  float4 m[kSerialVecs];
  const int64_t row_at = (head * kHeadSize + row) * kHeadSize;
KHK_UNROLL
  for (int i = 0; i < kSerialVecs; ++i)
    m[i] = args.state && length > 0 ? load_state4(args.state + row_at + (col + i * 8) * 4)
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  if (length > 0) {
    const float exp_A_log = expf(args.A_log[h]), dt_bias = args.dt_bias[h];
    const int64_t blocks = (length + kSerialBlock - 1) / kSerialBlock;
    SerialPrefetch pf;
    prefetch_block(args, tid, begin, static_cast<int>(length < kSerialBlock ? length : kSerialBlock),
                   h, row0, pf);
    stage_block(cta, smem, smem.stage[0], pf, exp_A_log, dt_bias);
    const int row_in_cta = row - row0;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t t0 = begin + blk * kSerialBlock;
      const int64_t left = end - t0;
      const int count = static_cast<int>(left < kSerialBlock ? left : kSerialBlock);
      const bool more = blk + 1 < blocks;  // the same in every thread: the barriers stay uniform
      if (more) {
        const int64_t next_left = left - kSerialBlock;
        prefetch_block(args, tid, t0 + kSerialBlock,
                       static_cast<int>(next_left < kSerialBlock ? next_left : kSerialBlock), h,
                       row0, pf);
      }
      const SerialStage& st = smem.stage[blk & 1];
      __nv_bfloat16* out = args.output + (t0 * kVHeads + h) * kHeadSize + row;
      for (int j = 0; j < count; ++j) {
        const float4 gates = st.gates[j];
        const float g = gates.x, beta = gates.y, kq = gates.z;
        float4 k[kSerialVecs], q[kSerialVecs];
KHK_UNROLL
        for (int i = 0; i < kSerialVecs; ++i) {
          k[i] = *reinterpret_cast<const float4*>(&st.k[j][(col + i * 8) * 4]);
          q[i] = *reinterpret_cast<const float4*>(&st.q[j][(col + i * 8) * 4]);
        }
        float sk = (dot4(m[0], k[0]) + dot4(m[1], k[1])) + (dot4(m[2], k[2]) + dot4(m[3], k[3]));
        float sq = (dot4(m[0], q[0]) + dot4(m[1], q[1])) + (dot4(m[2], q[2]) + dot4(m[3], q[3]));
        row_sums(cta, sk, sq);
        const float delta = beta * (st.v[j][row_in_cta] - g * sk);
        // g * row is ready before delta is: only one FMA per element waits for the reduction.
KHK_UNROLL
        for (int i = 0; i < kSerialVecs; ++i) {
          m[i].x = fmaf(delta, k[i].x, g * m[i].x);
          m[i].y = fmaf(delta, k[i].y, g * m[i].y);
          m[i].z = fmaf(delta, k[i].z, g * m[i].z);
          m[i].w = fmaf(delta, k[i].w, g * m[i].w);
        }
        if (col == 0)
          out[int64_t{j} * kVHeads * kHeadSize] = __float2bfloat16_rn(args.scale * (g * sq + delta * kq));
      }
      if (more) stage_block(cta, smem, smem.stage[(blk + 1) & 1], pf, exp_A_log, dt_bias);
    }
  }

KHK_UNROLL
  for (int i = 0; i < kSerialVecs; ++i) store_state4(args.new_state + row_at + (col + i * 8) * 4, m[i]);
}

}  // namespace khk::gdn_prefill
