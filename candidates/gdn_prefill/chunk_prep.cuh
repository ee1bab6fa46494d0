// The split route's first kernel: the key-only stages of chunk_stages.cuh (gates, A and P, the
// inverse, Tw and Tu, -W) for every (chunk, value head) of the call at once, one CTA each, into
// the records of chunk_record.cuh. Nothing here depends on the state, so the whole call's key
// work runs in parallel instead of inside the chain of dependent chunks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "chunk_inverse.cuh"
#include "chunk_record.cuh"
#include "chunk_stages.cuh"
#include "gdn_prefill.cuh"
#include "mma_tiles.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

/// Shared memory of one prep CTA: the record being built first (L, then -W, where the record
/// keeps W; Tu; P; the gates), then X, K, Q and the sequence bounds, and Tw (hi, lo): after them
/// with kPrepCtasPerSm 1, over Q and the bounds with 2 (nothing reads those once P is done), so
/// that the CTA needs 106 KB instead of 124 and two share an SM.
struct PrepSmem {
  static constexpr int kTileD = kChunk * kLdD * 2;
  static constexpr int kRecord = 0;
  static constexpr int kX = kRecord + ChunkRecord::kBytes;
  static constexpr int kK = kX + kChunk * kLdF * 4;
  static constexpr int kQ = kK + kTileD;
  static constexpr int kCu = kQ + kTileD;              // cu_seqlens, then (sequence, chunk)
  static constexpr int kEnd = (kCu + 8 * (kRankMaxSeqs + 1) + 16 + 15) / 16 * 16;  // Tw's rows: 16 B
  static constexpr int kTw = kPrepCtasPerSm == 2 ? kQ : kEnd;
  static constexpr int kBytes = kPrepCtasPerSm == 2 ? kEnd : kEnd + 2 * kChunk * kLdC * 2;
  static_assert(kChunk * kLdF * 4 == kTileD, "L is built where the record keeps W");
  static_assert(kTw + 2 * kChunk * kLdC * 2 <= kBytes, "Tw fits");
  static_assert(kTw % 16 == 0, "ldmatrix reads Tw's rows at 16-byte boundaries");
  static_assert(kPrepCtasPerSm == 1 || 2 * (kBytes + 1024) <= 228 * 1024, "two prep CTAs fit");
};

/// One CTA per (record slot, value head), heads of a slot adjacent (two share their K and Q in
/// L2). Slots that hold no chunk (chunk_record.cuh) exit at once. At most kRankMaxSeqs sequences.
__global__ void __launch_bounds__(kPrepThreads, kPrepCtasPerSm)
    chunk_prep_kernel(PrefillArgs args, unsigned char* records) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* sRecord = smem + PrepSmem::kRecord;
  float* sL = reinterpret_cast<float*>(sRecord + ChunkRecord::kW);
  __nv_bfloat16* sW = reinterpret_cast<__nv_bfloat16*>(sRecord + ChunkRecord::kW);
  __nv_bfloat16* sTu = reinterpret_cast<__nv_bfloat16*>(sRecord + ChunkRecord::kTu);
  __nv_bfloat16* sP = reinterpret_cast<__nv_bfloat16*>(sRecord + ChunkRecord::kP);
  const ChunkGates gates = chunk_gates_at(reinterpret_cast<float*>(sRecord + ChunkRecord::kGates));
  float* sX = reinterpret_cast<float*>(smem + PrepSmem::kX);
  __nv_bfloat16* sTw = reinterpret_cast<__nv_bfloat16*>(smem + PrepSmem::kTw);
  __nv_bfloat16* sK = reinterpret_cast<__nv_bfloat16*>(smem + PrepSmem::kK);
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem + PrepSmem::kQ);
  int64_t* sCu = reinterpret_cast<int64_t*>(smem + PrepSmem::kCu);
  int64_t* sFound = sCu + kRankMaxSeqs + 1;  // sequence, chunk; -1 for an empty slot

  const int64_t slot = blockIdx.x / kVHeads;
  const int h = static_cast<int>(blockIdx.x % kVHeads);
  const int n = static_cast<int>(args.num_seqs);
  for (int i = threadIdx.x; i <= n; i += kPrepThreads) sCu[i] = args.cu_seqlens[i];
  __syncthreads();
  if (threadIdx.x == 0) {  // the last sequence whose first slot is at most this one
    int lo = 0, hi = n - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (record_slot(sCu[mid], mid, 0) <= slot) lo = mid; else hi = mid - 1;
    }
    const int64_t ci = slot - record_slot(sCu[lo], lo, 0);
    const bool held = ci >= 0 && ci * kChunk < sCu[lo + 1] - sCu[lo];
    sFound[0] = held ? lo : -1;
    sFound[1] = ci;
  }
  __syncthreads();
  const int64_t seq = sFound[0];
  if (seq < 0) return;
  const int ci = static_cast<int>(sFound[1]);
  const int64_t t_begin = sCu[seq], length = sCu[seq + 1] - t_begin;
  const int rows = chunk_rows(length, ci), tiles = (rows + 15) / 16;

  // K and Q of the chunk, up to its last 16-row tile (rows past its end as zeros).
  const int64_t t0 = t_begin + int64_t{ci} * kChunk;
  const __nv_bfloat16* k_head = args.k + (h / kGvaRatio) * kHeadSize;
  const __nv_bfloat16* q_head = args.q + (h / kGvaRatio) * kHeadSize;
  for (int i = threadIdx.x; i < tiles * 16 * 16; i += kPrepThreads) {
    const int r = i / 16, seg = i % 16;
    const bool valid = r < rows;
    const int64_t src = valid ? (t0 + r) * kQKHeads * kHeadSize + 8 * seg : 0;
    copy_16b_async(sK + r * kLdD + 8 * seg, k_head + src, valid);
    copy_16b_async(sQ + r * kLdD + 8 * seg, q_head + src, valid);
  }
  copy_commit();
  zero_inverse_upper<kPrepThreads>(sX);
  if (threadIdx.x < 32) {
    float gate_a[2] = {0.f, 0.f}, gate_b[2] = {0.f, 0.f};
    load_chunk_gate_inputs(args, h, t_begin, length, ci, gate_a, gate_b);
    compute_chunk_gates(gate_a, gate_b, args.A_log[h], args.dt_bias[h], rows, gates);
  }
  copy_wait<0>();
  __syncthreads();

  constexpr int kWarps = kPrepThreads / 32;
  decay_products<kWarps, true>(sK, sQ, sL, sP, gates, tiles);
  __syncthreads();
  invert_unit_lower<kPrepThreads>(sL, sX, tiles);
  __syncthreads();
  inverse_factors<kPrepThreads>(sX, gates, sTw, sTu, tiles);  // perhaps over Q: P is done
  __syncthreads();
  w_product<kWarps>(sTw, sK, sW, tiles);
  __syncthreads();

  // Out go the parts the chain reads, up to the last 16-row tile (the lo parts only where the
  // split-operand level uses them), not the whole 55 KB image.
  unsigned char* out = records + (slot * kVHeads + h) * ChunkRecord::kBytes;
  constexpr int kTileC = kChunk * kLdC * 2;
  const int rows16 = 16 * tiles, part_rows = rows16 * kLdC * 2;
  auto part = [&](int offset, int bytes) {
    for (int i = threadIdx.x; i < bytes / 16; i += kPrepThreads)
      reinterpret_cast<uint4*>(out + offset)[i] =
          reinterpret_cast<const uint4*>(sRecord + offset)[i];
  };
  part(ChunkRecord::kW, rows16 * kLdD * 2);
  part(ChunkRecord::kTu, part_rows);
  if constexpr (kSplitState) part(ChunkRecord::kTu + kTileC, part_rows);
  part(ChunkRecord::kP, part_rows);
  if constexpr (kSplitOutput) part(ChunkRecord::kP + kTileC, part_rows);
  part(ChunkRecord::kGates, ChunkRecord::kBytes - ChunkRecord::kGates);
}

}  // namespace khk::gdn_prefill
