// The chunked route: one CTA per (sequence, value head, value slab) walks that sequence in chunks
// of 64 tokens with its slab of the state on chip, every product on the tensor cores, in one
// launch. The state's value columns evolve independently (the delta rule mixes only the key
// dimension), so a head's 128 value columns split into slabs of kVS without any exchange; the
// chunk's key-only work (K K^T, Q K^T, the inverse, W) is repeated per slab, which buys
// parallelism for the few-sequence shapes. Design, numerics and measurements: ROOFLINE.md.
//
// Per chunk (C = 64 tokens, M = S^T the [V][K] state slab, k-last like the tensors; gamma the
// in-chunk cumulative log-decay, beta the update gates; "Gamma_ij" = exp(gamma_i - gamma_j)):
//   A  = strict_lower(beta_i (K K^T)_ij Gamma_ij),  X = (I + A)^-1          (chunk_inverse.cuh)
//   W  = X diag(beta e^gamma) K,  U^T = V^T (X diag(beta))^T
//   Vn^T = U^T - M W^T                                      (the pseudo-values, [V][C])
//   O^T  = scale (M Q^T diag(e^gamma) + Vn^T P^T),  P = lower_incl((Q K^T)_ij Gamma_ij)
//   M    = e^gamma_last M + (Vn^T diag(e^(gamma_last - gamma))) K
// Warp w owns value rows 16w .. 16w+15 of the slab: its M (16 x 128), Vn^T and O^T (16 x 64) stay
// in registers as MMA accumulators and become A operands directly. The key-only products are
// shared out in 16-row units. Inputs arrive by cp.async, double-buffered: chunk c+1's K, Q, V
// load while chunk c computes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "chunk_inverse.cuh"
#include "gdn_prefill.cuh"
#include "mma_tiles.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

constexpr int kLdD = kHeadSize + 8;  // bf16 row stride of 128-wide tiles (K, Q, W): 272 B
constexpr int kLdC = kChunk + 8;     // bf16 row stride of 64-wide tiles (Tw, Tu, P): 144 B
constexpr int kLdO = 16 + 8;         // bf16 row stride of a warp's output staging (16 values)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kSoftplusThreshold = 20.0f;  // torch's softplus is linear above this

/// Shared memory of one CTA, in bytes from the start of the dynamic allocation.
template <int kVS>
struct ChunkSmem {
  static constexpr int kWarps = kVS / 16;
  static constexpr int kLdV = kVS + 8;
  static constexpr int kTileD = kChunk * kLdD * 2;     // one K or Q buffer
  static constexpr int kTileV = kChunk * kLdV * 2;     // one V buffer
  static constexpr int kTileF = kChunk * kLdF * 4;     // L or X
  static constexpr int kTileC = kChunk * kLdC * 2;     // Tw, Tu or P (one part)
  static constexpr int kK = 0;                         // K[2]
  static constexpr int kQ = kK + 2 * kTileD;           // Q[2]
  static constexpr int kV = kQ + 2 * kTileD;           // V[2]
  static constexpr int kL = kV + 2 * kTileV;           // L, later W (same size: 64 x 136 bf16)
  static constexpr int kX = kL + kTileF;
  static constexpr int kTw = kX + kTileF;              // Tw hi, lo
  static constexpr int kTu = kTw + 2 * kTileC;         // Tu hi, lo
  static constexpr int kP = kTu + 2 * kTileC;         // P hi, lo
  static constexpr int kO = kP + 2 * kTileC;           // per-warp output staging
  static constexpr int kGates = kO + kWarps * kChunk * kLdO * 2;
  static constexpr int kCu = kGates + 4 * kChunk * 4 + 16;    // gamma2, beta, e^gamma, fac; decay
  static constexpr int kBytes = kCu + 8 * (kRankMaxSeqs + 1) + 8;  // cu_seqlens; the ranked seq
  static_assert(kTileF == kTileD, "W is stored where L was");
};

/// The gates of a token, in fp32 as the reference computes them: log2 of the decay g and beta.
__device__ __forceinline__ void token_gates(float a, float b, float A_log, float dt_bias,
                                            float& log2_g, float& beta) {
  const float x = a + dt_bias;
  const float softplus = x > kSoftplusThreshold ? x : log1pf(expf(x));
  log2_g = -expf(A_log) * softplus * kLog2e;
  beta = 1.0f / (1.0f + expf(-b));
}

/// Tokens of chunk `ci` of a sequence of `length` tokens.
__device__ __forceinline__ int chunk_rows(int64_t length, int ci) {
  const int64_t left = length - int64_t{ci} * kChunk;
  return left < kChunk ? static_cast<int>(left) : kChunk;
}

/// What one launch of the chunked kernel computes. kFused: the whole call, one CTA per (sequence,
/// head, slab). The context-parallel passes (route_context_parallel.cuh) cut each sequence into
/// `groups` runs of whole chunks, one CTA per (sequence, head, slab, group), and use the
/// workspace of GroupArgs; with S_out = S_in A_g + B_g the state map of group g:
///   kTransfer   A_g: the chunks run from the identity with zero values, no output
///   kLocal      B_g: the chunks run from zero with their values, no output
///   kFromEntry  the outputs from the group's entry state (entry[g] from the scan, which holds
///               the initial state for group 0); the last group writes new_state
enum class ChunkPass { kFused, kTransfer, kLocal, kFromEntry };

/// The context-parallel passes' workspace: per (sequence * 8 + head) and group one 128 x 128
/// fp32 matrix [v][k] in each array.
struct GroupArgs {
  int groups = 1;
  float* maps = nullptr;         // A_g (kTransfer writes)
  float* local = nullptr;        // B_g (kLocal writes)
  float* entry = nullptr;        // entry states (the scan writes, kFromEntry reads)
};

template <int kVS, ChunkPass kPass = ChunkPass::kFused>
__global__ void __launch_bounds__(kVS * 2, 1)
    chunked_prefill_kernel(PrefillArgs args, GroupArgs group_args = {}) {
  using Smem = ChunkSmem<kVS>;
  constexpr bool kGrouped = kPass != ChunkPass::kFused;
  constexpr bool kWritesOutput = kPass == ChunkPass::kFused || kPass == ChunkPass::kFromEntry;
  constexpr bool kHasValues = kPass != ChunkPass::kTransfer;
  constexpr int kWarps = Smem::kWarps, kThreads = 32 * kWarps, kSlabs = kHeadSize / kVS;
  constexpr int kLdV = Smem::kLdV;
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* sK0 = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kK);
  __nv_bfloat16* sQ0 = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kQ);
  __nv_bfloat16* sV0 = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kV);
  float* sL = reinterpret_cast<float*>(smem + Smem::kL);
  __nv_bfloat16* sW = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kL);
  float* sX = reinterpret_cast<float*>(smem + Smem::kX);
  __nv_bfloat16* sTw = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kTw);  // hi, then lo
  __nv_bfloat16* sTu = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kTu);
  __nv_bfloat16* sP = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kP);
  float* sGamma2 = reinterpret_cast<float*>(smem + Smem::kGates);  // log2 cumulative decay
  float* sBeta = sGamma2 + kChunk;
  float* sEg = sBeta + kChunk;    // e^gamma_i
  float* sFac = sEg + kChunk;     // e^(gamma_last - gamma_i), 0 past the chunk's end
  float* sDecay = sFac + kChunk;  // e^gamma_last

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, c = lane % 4;
  const int64_t groups = kGrouped ? group_args.groups : 1;
  const int64_t grp = kGrouped ? int64_t{blockIdx.x} % groups : 0;
  const int64_t cta = kGrouped ? int64_t{blockIdx.x} / groups : int64_t{blockIdx.x};
  // The scan never reads the last group's map: entry states stop at the last group.
  if constexpr (kPass == ChunkPass::kTransfer || kPass == ChunkPass::kLocal)
    if (grp == groups - 1) return;
  const int slab = static_cast<int>(cta % kSlabs);
  const int h = static_cast<int>((cta / kSlabs) % kVHeads);
  const int v_first = slab * kVS + 16 * warp;  // this warp's first value row
  __nv_bfloat16* sO = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kO) + warp * kChunk * kLdO;

  // Longest sequences first: CTAs start in index order, so the one that walks the longest chain
  // should not be left for a late wave. The CTA's rank picks the sequence of that rank by length
  // (ties by index); above kRankMaxSeqs sequences (many CTAs per SM, short chains) index order.
  const int64_t rank = cta / (kSlabs * kVHeads);
  int64_t seq = rank, t_begin, length;
  if (args.num_seqs <= kRankMaxSeqs) {
    int64_t* sCu = reinterpret_cast<int64_t*>(smem + Smem::kCu);
    int64_t* sSeq = sCu + kRankMaxSeqs + 1;
    const int n = static_cast<int>(args.num_seqs);
    for (int i = threadIdx.x; i <= n; i += kThreads) sCu[i] = args.cu_seqlens[i];
    __syncthreads();
    for (int s = threadIdx.x; s < n; s += kThreads) {
      const int64_t len = sCu[s + 1] - sCu[s];
      int before = 0;
      for (int j = 0; j < n; ++j) {
        const int64_t other = sCu[j + 1] - sCu[j];
        before += other > len || (other == len && j < s);
      }
      if (before == rank) *sSeq = s;
    }
    __syncthreads();
    seq = *sSeq;
    t_begin = sCu[seq];
    length = sCu[seq + 1] - t_begin;
  } else {
    t_begin = args.cu_seqlens[seq];
    length = args.cu_seqlens[seq + 1] - t_begin;
  }
  const int64_t head_index = seq * kVHeads + h;
  const int64_t seq_begin = t_begin, seq_length = length;
  if constexpr (kGrouped) {  // this group's chunks: ceil(chunks / groups) each, the last ones short
    const int64_t chunks_all = length > 0 ? (length + kChunk - 1) / kChunk : 0;
    const int64_t per_group = (chunks_all + groups - 1) / groups;
    const int64_t first = (grp * per_group < chunks_all ? grp * per_group : chunks_all) * kChunk;
    const int64_t end = (grp + 1) * per_group * kChunk;
    const int64_t last = end < seq_length ? end : (seq_length > 0 ? seq_length : 0);
    t_begin = seq_begin + first;
    length = last > first ? last - first : 0;
  }
  // Where the final state goes: new_state for the whole sequence, the workspace for a group map.
  float* new_state = nullptr;
  const int64_t group_matrix = (head_index * groups + grp) * kStateFloats;
  if constexpr (kPass == ChunkPass::kFused) new_state = args.new_state + head_index * kStateFloats;
  if constexpr (kPass == ChunkPass::kFromEntry)
    if (grp == groups - 1) new_state = args.new_state + head_index * kStateFloats;
  if constexpr (kPass == ChunkPass::kTransfer) new_state = group_args.maps + group_matrix;
  if constexpr (kPass == ChunkPass::kLocal) new_state = group_args.local + group_matrix;

  // Tokens before the first sequence or after the last one belong to none: their output is zero,
  // as in the reference. The first and the last sequence's CTAs clear them, each its own columns.
  auto clear_output = [&](int64_t from, int64_t to) {
    constexpr int kSegs = kVS / 8;
    from = from < 0 ? 0 : from;
    to = to > args.total_tokens ? args.total_tokens : to;
    for (int64_t i = threadIdx.x; i < (to - from) * kSegs; i += kThreads)
      *reinterpret_cast<uint4*>(args.output + ((from + i / kSegs) * kVHeads + h) * kHeadSize +
                                slab * kVS + 8 * (i % kSegs)) = make_uint4(0, 0, 0, 0);
  };
  if (kWritesOutput && seq == 0 && grp == 0) clear_output(0, seq_begin);
  if (kWritesOutput && seq == args.num_seqs - 1 && grp == groups - 1)
    clear_output(seq_begin + (seq_length > 0 ? seq_length : 0), args.total_tokens);

  // M: value rows v_first + g (+8), key columns 8 nt + 2c (+1).
  // The initial M: the sequence's state (zero for an empty sequence, whatever the state was),
  // the group's entry state, the identity (kTransfer) or zero (kLocal).
  float M[16][4];
  const float* state = args.state && seq_length > 0 ? args.state + head_index * kStateFloats
                                                     : nullptr;
  // kFromEntry reads even group 0's entry from the workspace (the scan copies the initial state
  // there): with new_state == state, the last group may write new_state before group 0 starts.
  if constexpr (kPass == ChunkPass::kFromEntry) state = group_args.entry + group_matrix;
  if constexpr (kPass == ChunkPass::kLocal || kPass == ChunkPass::kTransfer) state = nullptr;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt) {
    float2 lo = make_float2(0.f, 0.f), hi = lo;
    if (state) {
      lo = *reinterpret_cast<const float2*>(state + (v_first + g) * kHeadSize + 8 * nt + 2 * c);
      hi = *reinterpret_cast<const float2*>(state + (v_first + g + 8) * kHeadSize + 8 * nt + 2 * c);
    }
    if constexpr (kPass == ChunkPass::kTransfer) {
      const int r = v_first + g, k = 8 * nt + 2 * c;
      lo = make_float2(r == k ? 1.f : 0.f, r == k + 1 ? 1.f : 0.f);
      hi = make_float2(r + 8 == k ? 1.f : 0.f, r + 8 == k + 1 ? 1.f : 0.f);
    }
    M[nt][0] = lo.x, M[nt][1] = lo.y, M[nt][2] = hi.x, M[nt][3] = hi.y;
  }

  const int chunks = length > 0 ? static_cast<int>((length + kChunk - 1) / kChunk) : 0;
  const __nv_bfloat16* k_head = args.k + (h / kGvaRatio) * kHeadSize;
  const __nv_bfloat16* q_head = args.q + (h / kGvaRatio) * kHeadSize;
  const __nv_bfloat16* v_head = args.v + h * kHeadSize + slab * kVS;

  // Issues chunk `ci`'s K, Q, V into buffer ci % 2 (rows past the chunk's end as zeros, rows
  // past its last 16-row tile not at all: nothing reads them).
  auto prefetch = [&](int ci) {
    const int64_t t0 = t_begin + int64_t{ci} * kChunk;
    const int rows = chunk_rows(length, ci);
    const int rows16 = (rows + 15) / 16 * 16;
    __nv_bfloat16* dK = sK0 + (ci % 2) * kChunk * kLdD;
    __nv_bfloat16* dQ = sQ0 + (ci % 2) * kChunk * kLdD;
    __nv_bfloat16* dV = sV0 + (ci % 2) * kChunk * kLdV;
    for (int i = threadIdx.x; i < rows16 * 16; i += kThreads) {
      const int r = i / 16, seg = i % 16;
      const bool valid = r < rows;
      const int64_t src = valid ? (t0 + r) * kQKHeads * kHeadSize + 8 * seg : 0;
      copy_16b_async(dK + r * kLdD + 8 * seg, k_head + src, valid);
      if constexpr (kWritesOutput) copy_16b_async(dQ + r * kLdD + 8 * seg, q_head + src, valid);
    }
    constexpr int kSegsV = kVS / 8;
    for (int i = threadIdx.x; kHasValues && i < rows16 * kSegsV; i += kThreads) {
      const int r = i / kSegsV, seg = i % kSegsV;
      const bool valid = r < rows;
      const int64_t src = valid ? (t0 + r) * kVHeads * kHeadSize + 8 * seg : 0;
      copy_16b_async(dV + r * kLdV + 8 * seg, v_head + src, valid);
    }
  };

  // Warp 0 holds the raw gate inputs of the next chunk: tokens 2 lane and 2 lane + 1.
  const float A_log = args.A_log[h], dt_bias = args.dt_bias[h];
  float gate_a[2] = {0.f, 0.f}, gate_b[2] = {0.f, 0.f};
  auto load_gates = [&](int ci) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int64_t i = int64_t{ci} * kChunk + 2 * lane + j;
      if (i < length) {
        gate_a[j] = __bfloat162float(args.a[(t_begin + i) * kVHeads + h]);
        gate_b[j] = __bfloat162float(args.b[(t_begin + i) * kVHeads + h]);
      }
    }
  };

  zero_inverse_upper<kThreads>(sX);
  if (chunks > 0) {
    prefetch(0);
    if (warp == 0) load_gates(0);
  }
  copy_commit();

  for (int ci = 0; ci < chunks; ++ci) {
    const int rows = chunk_rows(length, ci);
    const int tiles = (rows + 15) / 16;  // 16-row tiles holding tokens
    const __nv_bfloat16* sK = sK0 + (ci % 2) * kChunk * kLdD;
    const __nv_bfloat16* sQ = sQ0 + (ci % 2) * kChunk * kLdD;
    const __nv_bfloat16* sV = sV0 + (ci % 2) * kChunk * kLdV;

    __syncthreads();  // chunk ci-1 is done with every buffer
    if (ci + 1 < chunks) prefetch(ci + 1);
    copy_commit();

    // Gates: log2 decay cumsum over the chunk, beta, and the factors the products use.
    if (warp == 0) {
      float l2[2], beta[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const bool valid = 2 * lane + j < rows;
        token_gates(gate_a[j], gate_b[j], A_log, dt_bias, l2[j], beta[j]);
        l2[j] = valid ? l2[j] : 0.f;
        beta[j] = valid ? beta[j] : 0.f;
      }
      if (ci + 1 < chunks) load_gates(ci + 1);
      const float pair = l2[0] + l2[1];
      float incl = pair;
#pragma unroll
      for (int off = 1; off < 32; off *= 2) {
        const float up = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off) incl += up;
      }
      const float gamma0 = incl - pair + l2[0], gamma1 = incl;
      const int last = rows - 1;
      const float last_pair = __shfl_sync(0xffffffffu, incl, last / 2);
      const float last_first = __shfl_sync(0xffffffffu, incl - pair + l2[0], last / 2);
      const float gamma_last = last % 2 ? last_pair : last_first;
      const float gm[2] = {gamma0, gamma1};
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int i = 2 * lane + j;
        sGamma2[i] = gm[j];
        sBeta[i] = beta[j];
        sEg[i] = fast_exp2(gm[j]);
        sFac[i] = i < rows ? fast_exp2(gamma_last - gm[j]) : 0.f;
      }
      if (lane == 0) *sDecay = fast_exp2(gamma_last);
    }
    copy_wait<1>();
    __syncthreads();

    // A (fp32, strictly lower) into sL and P (bf16 hi + lo, lower with diagonal) into sP, by
    // 16x16 blocks of the lower triangle dealt round-robin to the warps (rows of 16 tokens have
    // 1 to 4 such blocks, so whole rows per warp would leave warps idle). Rows past the last tile
    // are left alone: the inverse and everything after it stop at the last tile.
    // Without outputs there is no P: one job per block, so every warp keeps working.
    const int jobs = kWritesOutput ? tiles * (tiles + 1) : tiles * (tiles + 1) / 2;
    for (int job = warp; job < jobs; job += kWarps) {
      const int blk = kWritesOutput ? job / 2 : job;
      // K K^T -> A, or Q K^T -> P: two jobs per block balance better
      const bool is_qk = kWritesOutput && job % 2;
      int rt = 0;
      while ((rt + 1) * (rt + 2) / 2 <= blk) ++rt;
      const int i0 = 16 * rt, j0 = 16 * (blk - rt * (rt + 1) / 2);
      const __nv_bfloat16* rows = is_qk ? sQ : sK;
      float acc[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < kHeadSize / 16; ++ks) {
        uint32_t a[4], b[4];
        ldmatrix_x4(a, rows + (i0 + lane % 16) * kLdD + 16 * ks + (lane / 16) * 8);
        ldmatrix_x4(b, sK + (j0 + lane % 8 + (lane / 16) * 8) * kLdD + 16 * ks +
                           ((lane / 8) % 2) * 8);
        mma_bf16(acc[0], a, b[0], b[1]);
        mma_bf16(acc[1], a, b[2], b[3]);
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int i = i0 + g + 8 * half, j = j0 + 8 * nt + 2 * c;
          const float gi = sGamma2[i];
          const float e0 = j <= i ? fast_exp2(gi - sGamma2[j]) : 0.f;
          const float e1 = j + 1 <= i ? fast_exp2(gi - sGamma2[j + 1]) : 0.f;
          const float x0 = acc[nt][2 * half] * e0, x1 = acc[nt][2 * half + 1] * e1;
          if (!is_qk) {
            const float bi = sBeta[i];
            *reinterpret_cast<float2*>(sL + i * kLdF + j) =
                make_float2(j < i ? bi * x0 : 0.f, j + 1 < i ? bi * x1 : 0.f);
          } else {
            uint32_t hi, lo;
            split_bf16x2(x0, x1, hi, lo);
            *reinterpret_cast<uint32_t*>(sP + i * kLdC + j) = hi;
            if constexpr (kSplitOutput)
              *reinterpret_cast<uint32_t*>(sP + kChunk * kLdC + i * kLdC + j) = lo;
          }
        }
    }
    __syncthreads();

    invert_unit_lower<kThreads>(sL, sX, tiles);
    __syncthreads();

    // Tw = X diag(beta e^gamma) and Tu = X diag(beta), lower blocks only, as bf16 hi (+ lo).
    for (int e = threadIdx.x; e < 16 * tiles * kChunk / 2; e += kThreads) {
      const int i = e / (kChunk / 2), j = 2 * (e % (kChunk / 2));
      if (j / 16 > i / 16) continue;
      const float2 x = *reinterpret_cast<const float2*>(sX + i * kLdF + j);
      const float u0 = x.x * sBeta[j], u1 = x.y * sBeta[j + 1];
      uint32_t hi, lo;
      split_bf16x2(u0 * sEg[j], u1 * sEg[j + 1], hi, lo);
      *reinterpret_cast<uint32_t*>(sTw + i * kLdC + j) = hi;
      if constexpr (kSplitState) *reinterpret_cast<uint32_t*>(sTw + kChunk * kLdC + i * kLdC + j) = lo;
      split_bf16x2(u0, u1, hi, lo);
      *reinterpret_cast<uint32_t*>(sTu + i * kLdC + j) = hi;
      if constexpr (kSplitState) *reinterpret_cast<uint32_t*>(sTu + kChunk * kLdC + i * kLdC + j) = lo;
    }
    __syncthreads();

    // -W = -Tw K into sW (where L was). Row tile rt sums rt + 1 blocks of Tw, so warps split
    // the key columns; with 8 warps each takes a quarter of them over the row tiles {0, 3} or
    // {1, 2}: 5 blocks each, and twice the accumulators in flight of a one-row-at-a-time walk.
    {
      constexpr int kColGroups = kWarps < 4 ? kWarps : 4;
      constexpr int kRowSets = kWarps / kColGroups;  // 1 or 2
      constexpr int kNT = kHeadSize / kColGroups / 8;  // n-tiles of 8 key columns per warp
      const int n_first = (warp % kColGroups) * (kHeadSize / kColGroups);
      const int row_set = warp / kColGroups;
      for (int step = 0; step < 4 / kRowSets; ++step) {
        const int rt = kRowSets == 1 ? step : (step == 0 ? row_set : 3 - row_set);
        if (rt >= tiles) continue;
        const int i0 = 16 * rt;
        float w[kNT][4] = {};
        for (int ks = 0; ks <= rt; ++ks) {
          uint32_t a_hi[4], a_lo[4];
          ldmatrix_x4(a_hi, sTw + (i0 + lane % 16) * kLdC + 16 * ks + (lane / 16) * 8);
          if constexpr (kSplitState)
            ldmatrix_x4(a_lo, sTw + kChunk * kLdC + (i0 + lane % 16) * kLdC + 16 * ks +
                                  (lane / 16) * 8);
#pragma unroll
          for (int p = 0; p < kNT / 2; ++p) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, sK + (16 * ks + lane % 8 + ((lane / 8) % 2) * 8) * kLdD +
                                     n_first + 16 * p + (lane / 16) * 8);
            mma_bf16(w[2 * p], a_hi, b[0], b[1]);
            mma_bf16(w[2 * p + 1], a_hi, b[2], b[3]);
            if constexpr (kSplitState) {
              mma_bf16(w[2 * p], a_lo, b[0], b[1]);
              mma_bf16(w[2 * p + 1], a_lo, b[2], b[3]);
            }
          }
        }
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const int col = n_first + 8 * nt + 2 * c;
          *reinterpret_cast<uint32_t*>(sW + (i0 + g) * kLdD + col) =
              pack_bf16x2(-w[nt][0], -w[nt][1]);
          *reinterpret_cast<uint32_t*>(sW + (i0 + g + 8) * kLdD + col) =
              pack_bf16x2(-w[nt][2], -w[nt][3]);
        }
      }
    }

    // Vn^T starts as U^T = V^T Tu^T: this warp's 16 value rows x the chunk's tokens (zero
    // without values).
    float vn[8][4] = {};
    if constexpr (kHasValues) {
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        if (p >= tiles) continue;
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          if (ks > p) continue;
          uint32_t a[4], b_hi[4], b_lo[4];
          ldmatrix_x4_trans(a, sV + (16 * ks + lane % 8 + (lane / 16) * 8) * kLdV + 16 * warp +
                                   ((lane / 8) % 2) * 8);
          const int b_off =
              (16 * p + lane % 8 + (lane / 16) * 8) * kLdC + 16 * ks + ((lane / 8) % 2) * 8;
          ldmatrix_x4(b_hi, sTu + b_off);
          mma_bf16(vn[2 * p], a, b_hi[0], b_hi[1]);
          mma_bf16(vn[2 * p + 1], a, b_hi[2], b_hi[3]);
          if constexpr (kSplitState) {
            ldmatrix_x4(b_lo, sTu + kChunk * kLdC + b_off);
            mma_bf16(vn[2 * p], a, b_lo[0], b_lo[1]);
            mma_bf16(vn[2 * p + 1], a, b_lo[2], b_lo[3]);
          }
        }
      }
    }
    __syncthreads();  // sW complete

    // Vn^T += M (-W)^T and O^T = M Q^T, sharing M's A fragments (hi, and lo for Vn).
    float o[8][4] = {};
#pragma unroll
    for (int ks = 0; ks < kHeadSize / 16; ++ks) {
      uint32_t m_hi[4], m_lo[4];
      split_a_fragment(M[2 * ks], M[2 * ks + 1], m_hi, m_lo);
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        if (p >= tiles) continue;
        const int b_off = (16 * p + lane % 8 + (lane / 16) * 8) * kLdD + 16 * ks + ((lane / 8) % 2) * 8;
        uint32_t bw[4], bq[4];
        ldmatrix_x4(bw, sW + b_off);
        if constexpr (kWritesOutput) ldmatrix_x4(bq, sQ + b_off);
        mma_bf16(vn[2 * p], m_hi, bw[0], bw[1]);
        mma_bf16(vn[2 * p + 1], m_hi, bw[2], bw[3]);
        if constexpr (kSplitState) {
          mma_bf16(vn[2 * p], m_lo, bw[0], bw[1]);
          mma_bf16(vn[2 * p + 1], m_lo, bw[2], bw[3]);
        }
        if constexpr (kWritesOutput) {
          mma_bf16(o[2 * p], m_hi, bq[0], bq[1]);
          mma_bf16(o[2 * p + 1], m_hi, bq[2], bq[3]);
          if constexpr (kSplitOutput) {
            mma_bf16(o[2 * p], m_lo, bq[0], bq[1]);
            mma_bf16(o[2 * p + 1], m_lo, bq[2], bq[3]);
          }
        }
      }
    }

    if constexpr (kWritesOutput) {
      // O^T = (O^T diag(e^gamma) + Vn^T P^T) scale, then out through this warp's staging tile.
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const float e0 = sEg[8 * nt + 2 * c], e1 = sEg[8 * nt + 2 * c + 1];
        o[nt][0] *= e0, o[nt][1] *= e1, o[nt][2] *= e0, o[nt][3] *= e1;
      }
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if (ks >= tiles) continue;
        uint32_t a_hi[4], a_lo[4];
        split_a_fragment(vn[2 * ks], vn[2 * ks + 1], a_hi, a_lo);
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          if (p < ks || p >= tiles) continue;
          const int b_off =
              (16 * p + lane % 8 + (lane / 16) * 8) * kLdC + 16 * ks + ((lane / 8) % 2) * 8;
          uint32_t b[4];
          ldmatrix_x4(b, sP + b_off);
          mma_bf16(o[2 * p], a_hi, b[0], b[1]);
          mma_bf16(o[2 * p + 1], a_hi, b[2], b[3]);
          if constexpr (kSplitOutput) {
            uint32_t b_lo[4];
            ldmatrix_x4(b_lo, sP + kChunk * kLdC + b_off);
            mma_bf16(o[2 * p], a_lo, b[0], b[1]);
            mma_bf16(o[2 * p + 1], a_lo, b[2], b[3]);
            mma_bf16(o[2 * p], a_hi, b_lo[0], b_lo[1]);
            mma_bf16(o[2 * p + 1], a_hi, b_lo[2], b_lo[3]);
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const int t = 8 * nt + 2 * c;
        sO[t * kLdO + g] = __float2bfloat16_rn(o[nt][0] * args.scale);
        sO[(t + 1) * kLdO + g] = __float2bfloat16_rn(o[nt][1] * args.scale);
        sO[t * kLdO + g + 8] = __float2bfloat16_rn(o[nt][2] * args.scale);
        sO[(t + 1) * kLdO + g + 8] = __float2bfloat16_rn(o[nt][3] * args.scale);
      }
      __syncwarp();
      {
        const int64_t t0 = t_begin + int64_t{ci} * kChunk;
        for (int q = lane; q < 2 * rows; q += 32) {
          const int t = q / 2, half = q % 2;
          *reinterpret_cast<uint4*>(args.output + ((t0 + t) * kVHeads + h) * kHeadSize + v_first +
                                    8 * half) =
              *reinterpret_cast<const uint4*>(sO + t * kLdO + 8 * half);
        }
      }
    }

    // M = e^gamma_last M + (Vn^T diag(fac)) K.
    const float decay = *sDecay;
#pragma unroll
    for (int nt = 0; nt < 16; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) M[nt][r] *= decay;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks >= tiles) continue;
      const float f0 = sFac[16 * ks + 2 * c], f1 = sFac[16 * ks + 2 * c + 1];
      const float f2 = sFac[16 * ks + 8 + 2 * c], f3 = sFac[16 * ks + 8 + 2 * c + 1];
      uint32_t a_hi[4], a_lo[4];
      split_a_fragment(vn[2 * ks], vn[2 * ks + 1], a_hi, a_lo, f0, f1, f2, f3);
#pragma unroll
      for (int p = 0; p < 8; ++p) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, sK + (16 * ks + lane % 8 + ((lane / 8) % 2) * 8) * kLdD + 16 * p +
                                 (lane / 16) * 8);
        mma_bf16(M[2 * p], a_hi, b[0], b[1]);
        mma_bf16(M[2 * p + 1], a_hi, b[2], b[3]);
        if constexpr (kSplitState) {
          mma_bf16(M[2 * p], a_lo, b[0], b[1]);
          mma_bf16(M[2 * p + 1], a_lo, b[2], b[3]);
        }
      }
    }
  }

  // The final state (zero for an empty sequence, whatever the initial state was), or the group's
  // map; nothing for a group before the last in kFromEntry.
  if (new_state == nullptr) return;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt) {
    *reinterpret_cast<float2*>(new_state + (v_first + g) * kHeadSize + 8 * nt + 2 * c) =
        make_float2(M[nt][0], M[nt][1]);
    *reinterpret_cast<float2*>(new_state + (v_first + g + 8) * kHeadSize + 8 * nt + 2 * c) =
        make_float2(M[nt][2], M[nt][3]);
  }
}

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel body itself
/// Launches the chunked route with value slabs of kVS columns: one CTA per (sequence, head,
/// slab), CTA order (sequence, head, slab) so the slabs of a head share their K and Q in L2.
/// The opt-in to more than 48 KB of shared memory is set on every call: it is no stream operation
/// (a captured call may make it) and costs the host a microsecond. A flag remembering it would be
/// a template static, which the dynamic linker unifies across every loaded library that holds this
/// kernel, so a second copy (kh gate loads two candidates in one process) would skip its own
/// opt-in and fail to launch.
template <int kVS>
cudaError_t launch_chunked(const PrefillArgs& args, cudaStream_t stream) {
  const int bytes = ChunkSmem<kVS>::kBytes;
  const cudaError_t e = cudaFuncSetAttribute(chunked_prefill_kernel<kVS>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  const int64_t ctas = args.num_seqs * kVHeads * (kHeadSize / kVS);
  chunked_prefill_kernel<kVS><<<static_cast<unsigned>(ctas), kVS * 2, bytes, stream>>>(args);
  return cudaGetLastError();
}
#endif

}  // namespace khk::gdn_prefill
