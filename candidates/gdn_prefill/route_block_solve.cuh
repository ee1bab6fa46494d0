// The block-solve route: short sequences in spans of 64 tokens, the delta rule's triangular system
// solved over 16-token blocks (block_solve_layout.h has the algebra, block_solve_span.cuh the
// phases), one CTA per (sequence, value head, tile of 32 value rows), one launch.
//
// Why: the small-chunk route advances the state once per 16 tokens, and each advance -- D and Dq
// over all 128 keys, then the update -- is a dependent step of about 1 us on its chain warps, so
// a call of a few hundred tokens waits for its chain (134 tokens x 1 sequence: ~14 us, 9 steps).
// Here the state products run once per 64 tokens, split over all eight warps, and the serial
// part between them is four small substitution steps; the token-token work (the Gram blocks, the
// 16 x 16 inverses) does not depend on the state at all.
//
// Per span, between CTA barriers:
//   0. the span's copies have landed (the next span's are requested, into the other buffer);
//   1. the gates (warp 4), the Gram blocks (K K^T and Q K^T, three items per warp at most) and
//      D = M K^T, Dq = M Q^T (warp w: row group w / 4, block w % 4);
//   2. the Gram blocks' decays, into the substitution's and the outputs' fragments; warps 0-3
//      also invert their diagonal block;
//   3. the substitution (warps 0 and 1, one per row group);
//   4. the outputs (warp w: row group w / 4, block w % 4) and the state update (warp w: row
//      group w / 4, keys of quarter w % 4), in shared memory.
// With GDN_TRACE (bench/micro/gdn_timeline.cu) thread 0 marks the phases of span 0 on trace.cuh's
// marks: rings_started = span 0's tiles landed, chunk0_tile_landed = phase 1 done,
// chunk0_phase_a = phase 2 done, chunk0_phase_b = the substitution done, chunk0_chain_step = span
// 0 done, last_chain_step = the last span done.
#pragma once

#include <cuda_runtime.h>

#include "block_solve_span.cuh"
#include "route_small_chunk.cuh"  // small_clear_rows
#include "trace.cuh"

namespace khk::gdn_prefill {

__global__ void __launch_bounds__(kSolveThreads) block_solve_kernel(PrefillArgs args) {
  extern __shared__ __align__(16) unsigned char smem[];
  SolveSmem& s = *reinterpret_cast<SolveSmem*>(smem);
  if (threadIdx.x == 0) trace(kTraceEntry);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int64_t cta = blockIdx.x;
  const int64_t head = cta / kSolveTilesPerHead;  // sequence * 8 + h
  const int64_t seq = head / kVHeads;
  const int h = static_cast<int>(head % kVHeads);
  const int row0 = static_cast<int>(cta % kSolveTilesPerHead) * kSolveRows;

  // Before cu_seqlens is read: sequence 0 most likely starts at token 0, so its CTAs request
  // that span now (kept below only if it is exactly the first span's request), and every CTA
  // loads its state rows.
  const int guess_count =
      static_cast<int>(args.total_tokens < kSolveSpan ? args.total_tokens : kSolveSpan);
  const bool guessed = seq == 0 && guess_count > 0;
  if (guessed) solve_request(args, s.tiles[0], 0, guess_count, h, row0, tid);
  const float A_log = args.A_log[h], dt_bias = args.dt_bias[h];
  constexpr int kPairs = kSolveRows * kHeadSize / 2;
  float2 rows[kPairs / kSolveThreads];
  const float* state_rows = args.state + (head * kHeadSize + row0) * kHeadSize;
#pragma unroll
  for (int i = 0; i < kPairs / kSolveThreads; ++i)
    rows[i] = args.state ? reinterpret_cast<const float2*>(state_rows)[tid + i * kSolveThreads]
                         : make_float2(0.0f, 0.0f);

  const int64_t begin = args.cu_seqlens[seq];
  const int64_t end = args.cu_seqlens[seq + 1];
  const int64_t length = end > begin ? end - begin : 0;
  if (tid == 0) trace(kTraceItem);
  // Tokens outside every sequence get zero output, as in the reference.
  if (seq == 0) small_clear_rows<kSolveRows, kSolveThreads>(args, 0, begin, h, row0);
  if (seq == args.num_seqs - 1)
    small_clear_rows<kSolveRows, kSolveThreads>(args, begin + length, args.total_tokens, h, row0);

  // An empty sequence leaves its state at zero whatever the initial one.
#pragma unroll
  for (int i = 0; i < kPairs / kSolveThreads; ++i) {
    const int pair = tid + i * kSolveThreads, row = pair / (kHeadSize / 2);
    const float2 x = length > 0 ? rows[i] : make_float2(0.0f, 0.0f);
    *reinterpret_cast<float2*>(&s.m[row][2 * (pair % (kHeadSize / 2))]) = x;
  }

  const int64_t spans = (length + kSolveSpan - 1) / kSolveSpan;
  const auto span_count = [&](int64_t c) {
    const int64_t left = length - c * kSolveSpan;
    return static_cast<int>(left < kSolveSpan ? left : kSolveSpan);
  };
  if (spans > 0) {
    const bool kept = guessed && begin == 0 && span_count(0) == guess_count;
    if (guessed && !kept) {  // the guess lands before the request that overwrites it
      copy_commit();
      copy_wait<0>();
    }
    if (!kept) solve_request(args, s.tiles[0], begin, span_count(0), h, row0, tid);
  }
  copy_commit();

  __nv_bfloat16* out = args.output + (begin * kVHeads + h) * kHeadSize + row0;
  for (int64_t c = 0; c < spans; ++c) {
    const SolveTiles& tiles = s.tiles[c & 1];
    const int count = span_count(c);
    const int blocks = (count + kSolveBlock - 1) / kSolveBlock;
    if (c + 1 < spans) {
      solve_request(args, s.tiles[(c + 1) & 1], begin + (c + 1) * kSolveSpan, span_count(c + 1),
                    h, row0, tid);
      copy_commit();
      copy_wait<1>();
    } else {
      copy_wait<0>();
    }
    __syncthreads();  // 0: the span's tiles, and the state rows
    if (c == 0 && tid == 0) trace(kTraceRingStarted);

    // 1. Gates, raw Gram blocks, D and Dq.
    if (warp == 4) solve_gates(tiles, s, count, h, A_log, dt_bias, args.scale, lane);
    float gram[kSolveGramSlots][2][4];
#pragma unroll
    for (int slot = 0; slot < kSolveGramSlots; ++slot) {
      const int item = warp + kSolveWarps * slot;
      if (item < kSolveGramItems && solve_gram_item(item).b < blocks)
        solve_gram(tiles, solve_gram_item(item), gram[slot], lane);
    }
    if (warp % kSolveBlocks < blocks)
      solve_state_products(s, tiles, warp / kSolveBlocks, warp % kSolveBlocks, lane);
    __syncthreads();  // 1: the gates
    if (c == 0 && tid == 0) trace(kTraceFirstTile);

    // 2. The decays into the fragments; the diagonal blocks' inverses.
#pragma unroll
    for (int slot = 0; slot < kSolveGramSlots; ++slot) {
      const int item = warp + kSolveWarps * slot;
      if (item < kSolveGramItems && solve_gram_item(item).b < blocks)
        solve_gram_epilogue(s, solve_gram_item(item), gram[slot], args.scale, lane);
    }
    if (warp < blocks) {
      __syncwarp();  // the warp's own A_bb
      solve_diagonal(s, warp, lane);
    }
    __syncthreads();  // 2: the fragments
    if (c == 0 && tid == 0) trace(kTraceFirstProducts);

    // 3. The substitution.
    if (warp < kSolveGroups) solve_substitute(s, tiles, warp, blocks, lane);
    __syncthreads();  // 3: delta
    if (c == 0 && tid == 0) trace(kTraceFirstOperands);

    // 4. Outputs and the state update.
    const int group = warp / kSolveBlocks, part = warp % kSolveBlocks;
    if (part < blocks) solve_outputs(s, group, part, count, out + c * kSolveSpan * kVHeads * kHeadSize, lane);
    solve_update(s, tiles, group, part, blocks, lane);
    __syncthreads();  // 4: M for the next span; the tiles free for the next request
    if (c == 0 && tid == 0) trace(kTraceFirstChain);
    if (c == spans - 1 && tid == 0) trace(kTraceLastChain);
  }

  // The state rows (k-last: new_state[n][h][v][k] = M[v][k]).
  float* exit_rows = args.new_state + (head * kHeadSize + row0) * kHeadSize;
  for (int pair = tid; pair < kPairs; pair += kSolveThreads) {
    const int row = pair / (kHeadSize / 2);
    reinterpret_cast<float2*>(exit_rows)[pair] =
        *reinterpret_cast<const float2*>(&s.m[row][2 * (pair % (kHeadSize / 2))]);
  }
  if (tid == 0) trace(kTraceStored);
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel body itself
/// One CTA per (sequence, head, row tile), in that order. The opt-in to more than 48 KB of shared
/// memory is set on every call, as the other routes do.
inline cudaError_t launch_block_solve(const PrefillArgs& args, cudaStream_t stream) {
  constexpr int bytes = sizeof(SolveSmem);
  const cudaError_t e = cudaFuncSetAttribute(block_solve_kernel,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  const int64_t ctas = args.num_seqs * kVHeads * kSolveTilesPerHead;
  if (ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;
  block_solve_kernel<<<static_cast<unsigned>(ctas), kSolveThreads, bytes, stream>>>(args);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
