// The correction of the small-chunk route's context-parallel form (small_chunk_groups.h has the
// workspace): a token t of group g >= 1 gets the output
//   o_t = partial_t + E_g qmap_t,
// partial_t being its output on the walk from zero (B_g's walk) and qmap_t = scale A_{g,<=t} q_t
// the query through the group's map up to t (the identity walk's outputs), because the state at
// t is E_g A_{g,<=t} + B_{g,<=t}. So once the scan has the entry states, every group's outputs
// are one 128 x 128 by 128 x tokens product per (sequence, head, group), all at once, instead of
// a second walk of the group's chunks after the scan.
//
// On tensor cores with E_g and qmap as bf16 hi + lo pairs (hi rounded: the split is off the
// critical path here, unlike the chain's truncated one) and three products (hi hi, lo hi, hi lo):
// about 2^-17 relative per term, fp32 sums, the partial added in fp32 and the output rounded to
// bf16 once.
#pragma once

#include "small_chunk_chain.cuh"  // small_load_rows; mma_tiles.cuh: split_a_fragment, split_bf16x2
#include "small_chunk_groups.h"

namespace khk::gdn_prefill {

constexpr int kCorrectWarps = kHeadSize / 16;  // 16 value rows each
constexpr int kCorrectThreads = 32 * kCorrectWarps;
constexpr int kCorrectTokens = 64;  // tokens per CTA, in slices of kSmallChunk
constexpr int kCorrectSlices = kCorrectTokens / kSmallChunk;
// Row stride of the qmap tile in floats: a half-warp's float2 loads of B fragments (4 tokens x 4
// key pairs) fall in distinct banks.
constexpr int kCorrectStride = kHeadSize + 8;

struct SmallCorrectSmem {
  float qmap[kCorrectTokens][kCorrectStride];  // the CTA's tokens' qmap rows, [token][key]
};

/// CTAs per (sequence, head, group) for a call of `total_tokens` in `groups` groups: enough
/// for the longest group any sequence can have (the host does not know the lengths).
__host__ __device__ constexpr int64_t small_correct_tiles(int64_t total_tokens, int groups) {
  const int64_t chunks = (total_tokens + kSmallChunk - 1) / kSmallChunk;
  const int64_t span = (chunks + groups - 1) / groups * kSmallChunk;
  return (span + kCorrectTokens - 1) / kCorrectTokens;
}

/// CTA (head, group 1 .. groups - 1, tile), tile fastest. Every load is issued before the first
/// use (the qmap tile by cp.async, the partials and E_g's rows into registers), so a CTA waits
/// for one memory round trip, not one per slice. Two CTAs per SM (128 registers).
__global__ void __launch_bounds__(kCorrectThreads, 2)
    small_cp_correct_kernel(PrefillArgs args, SmallGroupSpace space, int64_t tiles) {
  extern __shared__ __align__(16) unsigned char smem[];
  SmallCorrectSmem& s = *reinterpret_cast<SmallCorrectSmem*>(smem);
  const int64_t cta = blockIdx.x;
  const int64_t tile = cta % tiles, rest = cta / tiles;
  const int group = 1 + static_cast<int>(rest % (space.groups - 1));
  const int64_t head = rest / (space.groups - 1);
  const int64_t seq = head / kVHeads;
  const int h = static_cast<int>(head % kVHeads);
  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const GroupTokens tokens = group_tokens(end > begin ? end - begin : 0, space.groups, group);
  const int64_t from = tile * kCorrectTokens;
  if (from >= tokens.count) return;  // the whole CTA: no barrier is skipped by some threads only
  const int64_t first = begin + tokens.from + from;  // the CTA's first token
  const int64_t left = tokens.count - from;
  const int count = static_cast<int>(left < kCorrectTokens ? left : kCorrectTokens);
  constexpr int64_t kTokenStride = kVHeads * kHeadSize;  // floats from one token's row to the next

  // The qmap tile (invalid tokens' rows zeroed).
  const float* qmap = space.qmap() + first * kTokenStride + h * kHeadSize;
  constexpr int kPieces = kCorrectTokens * kHeadSize / 4;  // 16-byte pieces
  for (int u = static_cast<int>(threadIdx.x); u < kPieces; u += kCorrectThreads) {
    const int token = u / (kHeadSize / 4), piece = u % (kHeadSize / 4);
    const bool valid = token < count;
    copy_16b_async(&s.qmap[token][4 * piece], qmap + (valid ? token : 0) * kTokenStride + 4 * piece,
                   valid);
  }
  copy_commit();

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, c = lane % 4;
  const int row0 = 16 * warp;
  // The accumulators start at the partials: [slice][n-tile][element].
  const float* partial = space.partial() + first * kTokenStride + h * kHeadSize;
  float acc[kCorrectSlices][2][4];
#pragma unroll
  for (int sl = 0; sl < kCorrectSlices; ++sl)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = kSmallChunk * sl + 8 * nt + 2 * c + e % 2, row = row0 + g + 8 * (e / 2);
        acc[sl][nt][e] = t < count ? partial[t * kTokenStride + row] : 0.0f;
      }
  uint32_t ehi[kHeadSize / 16][4], elo[kHeadSize / 16][4];  // E_g's A fragments, per key step
  {
    float m[16][4];
    small_load_rows(m, space.exit(head, group - 1) + row0 * kHeadSize, lane);
#pragma unroll
    for (int k = 0; k < kHeadSize / 16; ++k) split_a_fragment(m[2 * k], m[2 * k + 1], ehi[k], elo[k]);
  }
  copy_wait<0>();
  __syncthreads();

#pragma unroll
  for (int sl = 0; sl < kCorrectSlices; ++sl) {
    if (kSmallChunk * sl >= count) break;  // uniform across the CTA; no barrier follows
#pragma unroll
    for (int k = 0; k < kHeadSize / 16; ++k)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const float* row = &s.qmap[kSmallChunk * sl + 8 * nt + g][16 * k + 2 * c];
        const float2 x0 = *reinterpret_cast<const float2*>(row);
        const float2 x1 = *reinterpret_cast<const float2*>(row + 8);
        uint32_t b0h, b0l, b1h, b1l;
        split_bf16x2(x0.x, x0.y, b0h, b0l);
        split_bf16x2(x1.x, x1.y, b1h, b1l);
        mma_bf16(acc[sl][nt], ehi[k], b0h, b1h);
        mma_bf16(acc[sl][nt], elo[k], b0h, b1h);
        mma_bf16(acc[sl][nt], ehi[k], b0l, b1l);
      }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = kSmallChunk * sl + 8 * nt + 2 * c + e % 2, row = row0 + g + 8 * (e / 2);
        if (t < count)
          args.output[(first + t) * kTokenStride + h * kHeadSize + row] =
              __float2bfloat16_rn(acc[sl][nt][e]);
      }
  }
}

}  // namespace khk::gdn_prefill
