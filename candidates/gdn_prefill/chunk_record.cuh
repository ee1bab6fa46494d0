// The key-only results of one (chunk, value head) as the split route keeps them between its two
// kernels (chunk_prep.cuh writes them, the chunked kernel's kPrepared form reads them back): -W,
// Tu, P and the gate vectors. They depend on q, k, a and b only, never on the state, so every
// chunk of every sequence computes them in parallel, and the chain of dependent chunks is left
// only the state products (ROOFLINE.md, "The split route").
//
// A record is an image of the shared-memory tiles the state stages read, padded rows included,
// so the chain moves it with flat 16-byte copies and no index arithmetic per element.
#pragma once

#include <cstdint>

#include "chunk_inverse.cuh"
#include "chunk_stages.cuh"
#include "gdn_prefill.cuh"

namespace khk::gdn_prefill {

/// Byte offsets inside one record.
struct ChunkRecord {
  static constexpr int kW = 0;                                // -W: kChunk x kLdD bf16
  static constexpr int kTu = kW + kChunk * kLdD * 2;          // Tu hi, lo: kChunk x kLdC bf16
  static constexpr int kP = kTu + 2 * kChunk * kLdC * 2;      // P hi, lo
  static constexpr int kGates = kP + 2 * kChunk * kLdC * 2;   // ChunkGates: 4 kChunk + 1 floats
  static constexpr int kBytes = kGates + (4 * kChunk + 4) * 4;
  static_assert(kBytes % 16 == 0 && kTu % 16 == 0 && kP % 16 == 0 && kGates % 16 == 0,
                "records and their parts move as 16-byte pieces");
};

/// Record slots of a call of T tokens and N sequences: chunk ci of sequence s (its tokens from
/// cu[s]) has slot floor(cu[s] / 64) + s + ci. Slots never collide: sequence s's chunks end at
/// most at floor(cu[s+1] / 64) + s + 1, where sequence s + 1's begin; the last one ends at most
/// at floor(T / 64) + N. So no prefix sum over the sequences is needed to place a chunk.
__host__ __device__ constexpr int64_t record_slots(int64_t total_tokens, int64_t num_seqs) {
  return total_tokens / kChunk + num_seqs;
}

__host__ __device__ constexpr int64_t record_slot(int64_t seq_begin, int64_t seq, int64_t ci) {
  return seq_begin / kChunk + seq + ci;
}

/// Workspace bytes of the split route's records: one per (slot, value head).
__host__ __device__ constexpr uint64_t record_workspace_bytes(int64_t total_tokens,
                                                              int64_t num_seqs) {
  return static_cast<uint64_t>(record_slots(total_tokens, num_seqs)) * kVHeads *
         ChunkRecord::kBytes;
}

}  // namespace khk::gdn_prefill
