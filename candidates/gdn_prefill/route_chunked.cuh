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
// load while chunk c computes. The stages themselves are in chunk_stages.cuh.
//
// The kPrepared form is the split route's chain (route_split.cuh): the key-only tiles of each
// chunk (-W, Tu, P, the gates) arrive with its K, Q and V from the record chunk_prep.cuh wrote,
// so the chain runs only the state stages.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "bulk_copy.cuh"
#include "chunk_inverse.cuh"
#include "chunk_record.cuh"
#include "chunk_stages.cuh"
#include "gdn_prefill.cuh"
#include "mma_tiles.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

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

/// Where a chunk's key-only tiles are for the state stages.
struct KeyTiles {
  const __nv_bfloat16* w;  // -W
  const __nv_bfloat16* tu;
  const __nv_bfloat16* p;
  ChunkGates gates;
};

/// What one launch of the chunked kernel computes. kFused: the whole call, one CTA per (sequence,
/// head, slab). The context-parallel passes (route_context_parallel.cuh) cut each sequence into
/// `groups` runs of whole chunks, one CTA per (sequence, head, slab, group), and use the
/// workspace of GroupArgs; with S_out = S_in A_g + B_g the state map of group g:
///   kTransfer   A_g: the chunks run from the identity with zero values, no output
///   kLocal      B_g: the chunks run from zero with their values, no output
///   kFromEntry  the outputs from the group's entry state (entry[g] from the scan, which holds
///               the initial state for group 0); the last group writes new_state
enum class ChunkPass { kFused, kTransfer, kLocal, kFromEntry };

/// Warps per 16 value rows of a chunked-kernel CTA: kChainKSplit in the kPrepared form's fused
/// pass on slabs of at most 32 value columns (each warp of a pair holds half of the rows' key
/// columns), else 1.
template <int kVS, bool kPrepared, ChunkPass kPass = ChunkPass::kFused>
constexpr int kKeySplit = kPrepared && kPass == ChunkPass::kFused && kVS <= 32 ? kChainKSplit : 1;
/// Threads of one chunked-kernel CTA.
template <int kVS, bool kPrepared, ChunkPass kPass = ChunkPass::kFused>
constexpr int kChunkThreads = kVS * 2 * kKeySplit<kVS, kPrepared, kPass>;

/// Shared memory of one CTA of the kPrepared form: K, Q, V and the chunk's record
/// (chunk_record.cuh), each double-buffered, then the output staging, the sequence bounds, the
/// buffers' barriers and, with the key split, each row group's exchange of partial sums (Vn^T of
/// both halves, O^T of the second: 32 floats per lane each).
template <int kVS>
struct ChainSmem {
  static constexpr int kRowGroups = kVS / 16;
  static constexpr int kWarps = kRowGroups * kKeySplit<kVS, true>;
  static constexpr int kLdV = kVS + 8;
  static constexpr int kTileD = kChunk * kLdD * 2;
  static constexpr int kTileV = kChunk * kLdV * 2;
  static constexpr int kK = 0;
  static constexpr int kQ = kK + 2 * kTileD;
  static constexpr int kV = kQ + 2 * kTileD;
  static constexpr int kRecord = kV + 2 * kTileV;
  static constexpr int kO = kRecord + 2 * ChunkRecord::kBytes;
  static constexpr int kCu = kO + kWarps * kChunk * kLdO * 2;
  static constexpr int kBarriers = kCu + 8 * (kRankMaxSeqs + 1) + 8;  // one per buffer
  static constexpr int kExchange = kBarriers + 16;
  static constexpr int kExchangeFloats = 3 * 32 * 32;  // per row group
  static constexpr int kBytes =
      kExchange + (kKeySplit<kVS, true> > 1 ? kRowGroups * kExchangeFloats * 4 : 0);
  static_assert(kBytes <= 227 * 1024, "one chain CTA fits an SM's shared memory");
};


/// The context-parallel passes' workspace: per (sequence * 8 + head) and group one 128 x 128
/// fp32 matrix [v][k] in each array. `records`: the split route's chunk records (kPrepared).
struct GroupArgs {
  int groups = 1;
  float* maps = nullptr;         // A_g (kTransfer writes)
  float* local = nullptr;        // B_g (kLocal writes)
  float* entry = nullptr;        // entry states (the scan writes, kFromEntry reads)
  const unsigned char* records = nullptr;
};

/// kPrepared: the split route's chain. The chunk's key-only tiles come from its record, loaded
/// with K, Q and V, instead of being computed here; at most 64 value columns per slab.
template <int kVS, ChunkPass kPass = ChunkPass::kFused, bool kPrepared = false>
__global__ void __launch_bounds__(kChunkThreads<kVS, kPrepared, kPass>, 1)
    chunked_prefill_kernel(PrefillArgs args, GroupArgs group_args = {}) {
  using Smem = std::conditional_t<kPrepared, ChainSmem<kVS>, ChunkSmem<kVS>>;
  static_assert(!kPrepared || kVS <= 64, "the kPrepared form holds at most 64 value columns");
  constexpr int kSplitK = kKeySplit<kVS, kPrepared, kPass>;
  constexpr int kRowGroups = kVS / 16, kKeyTiles = 16 / kSplitK;  // M's 8-column key tiles
  constexpr bool kGrouped = kPass != ChunkPass::kFused;
  constexpr bool kWritesOutput = kPass == ChunkPass::kFused || kPass == ChunkPass::kFromEntry;
  constexpr bool kHasValues = kPass != ChunkPass::kTransfer;
  // (Smem::kWarps is the most warps the layout holds: a kPrepared pass other than the fused one
  // runs without the key split, on fewer.)
  constexpr int kWarps = kVS / 16 * kSplitK, kThreads = 32 * kWarps, kSlabs = kHeadSize / kVS;
  constexpr int kLdV = Smem::kLdV;
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* sK0 = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kK);
  __nv_bfloat16* sQ0 = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kQ);
  __nv_bfloat16* sV0 = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kV);
  // The key-only tiles of chunk ci: fixed buffers this CTA computes them into, or the record
  // buffer ci % 2 (kPrepared).
  auto key_tiles = [&](int ci) -> KeyTiles {
    if constexpr (kPrepared) {
      unsigned char* r = smem + Smem::kRecord + (ci % 2) * ChunkRecord::kBytes;
      return {reinterpret_cast<const __nv_bfloat16*>(r + ChunkRecord::kW),
              reinterpret_cast<const __nv_bfloat16*>(r + ChunkRecord::kTu),
              reinterpret_cast<const __nv_bfloat16*>(r + ChunkRecord::kP),
              chunk_gates_at(reinterpret_cast<float*>(r + ChunkRecord::kGates))};
    } else {
      return {reinterpret_cast<const __nv_bfloat16*>(smem + Smem::kL),
              reinterpret_cast<const __nv_bfloat16*>(smem + Smem::kTu),
              reinterpret_cast<const __nv_bfloat16*>(smem + Smem::kP),
              chunk_gates_at(reinterpret_cast<float*>(smem + Smem::kGates))};
    }
  };

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, c = lane % 4;
  const int64_t groups = kGrouped ? group_args.groups : 1;
  const int64_t grp = kGrouped ? int64_t{blockIdx.x} % groups : 0;
  const int64_t cta = kGrouped ? int64_t{blockIdx.x} / groups : int64_t{blockIdx.x};
  // The scan never reads the last group's map: entry states stop at the last group.
  if constexpr (kPass == ChunkPass::kTransfer || kPass == ChunkPass::kLocal)
    if (grp == groups - 1) return;
  const int slab = static_cast<int>(cta % kSlabs);
  const int h = static_cast<int>((cta / kSlabs) % kVHeads);
  // This warp's 16 value rows (its row group) and, with the key split, its half of their key
  // columns: k0 .. k0 + 8 kKeyTiles - 1.
  // Without the split both are compile-time constants: the fused and context-parallel kernels,
  // bound by instruction issue, measured 9 % slower at 8192 tokens with them computed at run time.
  const int row_group = kSplitK > 1 ? warp % kRowGroups : warp;
  const int key_half = kSplitK > 1 ? warp / kRowGroups : 0;
  const int k0 = key_half * 8 * kKeyTiles;
  const int v_first = slab * kVS + 16 * row_group;
  __nv_bfloat16* sO = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kO) + warp * kChunk * kLdO;

  // Longest sequences first: CTAs start in index order, so the one that walks the longest chain
  // should not be left for a late wave.
  int64_t t_begin, length;
  const int64_t seq = sequence_of_rank<kThreads>(args, cta / (kSlabs * kVHeads),
                                                 reinterpret_cast<int64_t*>(smem + Smem::kCu),
                                                 t_begin, length);
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
  // kPrepared: the record of this CTA's chunk ci is record_first + ci (times the heads, plus h).
  const int64_t record_first = record_slot(seq_begin, seq, (t_begin - seq_begin) / kChunk);
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
  float M[kKeyTiles][4];
  const float* state = args.state && seq_length > 0 ? args.state + head_index * kStateFloats
                                                     : nullptr;
  // kFromEntry reads even group 0's entry from the workspace (the scan copies the initial state
  // there): with new_state == state, the last group may write new_state before group 0 starts.
  if constexpr (kPass == ChunkPass::kFromEntry) state = group_args.entry + group_matrix;
  if constexpr (kPass == ChunkPass::kLocal || kPass == ChunkPass::kTransfer) state = nullptr;
#pragma unroll
  for (int nt = 0; nt < kKeyTiles; ++nt) {
    const int k = k0 + 8 * nt + 2 * c;
    float2 lo = make_float2(0.f, 0.f), hi = lo;
    if (state) {
      lo = *reinterpret_cast<const float2*>(state + (v_first + g) * kHeadSize + k);
      hi = *reinterpret_cast<const float2*>(state + (v_first + g + 8) * kHeadSize + k);
    }
    if constexpr (kPass == ChunkPass::kTransfer) {
      const int r = v_first + g;
      lo = make_float2(r == k ? 1.f : 0.f, r == k + 1 ? 1.f : 0.f);
      hi = make_float2(r + 8 == k ? 1.f : 0.f, r + 8 == k + 1 ? 1.f : 0.f);
    }
    M[nt][0] = lo.x, M[nt][1] = lo.y, M[nt][2] = hi.x, M[nt][3] = hi.y;
  }

  const int chunks = length > 0 ? static_cast<int>((length + kChunk - 1) / kChunk) : 0;
  const __nv_bfloat16* k_head = args.k + (h / kGvaRatio) * kHeadSize;
  const __nv_bfloat16* q_head = args.q + (h / kGvaRatio) * kHeadSize;
  const __nv_bfloat16* v_head = args.v + h * kHeadSize + slab * kVS;

  // kPrepared: the parts of chunk ci's record this pass reads (up to the last 16-row tile) into
  // record buffer ci % 2, as 16-byte cp.async from every thread (CHAIN_COPIES 0) or as one bulk
  // copy per part issued by warp 0 and counted by that buffer's barrier (1); with 2 the K, Q and
  // V rows go the same way, one bulk copy per row, and the rows past the chunk's end are zeroed
  // by plain stores of the whole CTA (the state update reads them, times a zero factor).
  uint64_t* barriers = nullptr;
  if constexpr (kPrepared) barriers = reinterpret_cast<uint64_t*>(smem + Smem::kBarriers);
  auto prefetch_record = [&](int ci, int64_t t0, int rows, int rows16, __nv_bfloat16* dK,
                             __nv_bfloat16* dQ, __nv_bfloat16* dV) {
    if constexpr (kPrepared) {
      constexpr int kTileC = kChunk * kLdC * 2;
      constexpr int kRowV = kVS * 2;  // bytes of one V row of the slab
      const int part_rows = rows16 * kLdC * 2;  // bytes of one Tu or P part up to the last tile
      const int64_t record = (record_first + ci) * kVHeads + h;
      const unsigned char* rec = group_args.records + record * ChunkRecord::kBytes;
      unsigned char* dst = smem + Smem::kRecord + (ci % 2) * ChunkRecord::kBytes;
      if constexpr (kChainCopies == 0) {
        auto part = [&](int offset, int bytes) {
          for (int i = threadIdx.x; i < bytes / 16; i += kThreads)
            copy_16b_async(dst + offset + 16 * i, rec + offset + 16 * i, true);
        };
        part(ChunkRecord::kW, rows16 * kLdD * 2);
        if constexpr (kHasValues) part(ChunkRecord::kTu, part_rows);
        if constexpr (kHasValues && kSplitState) part(ChunkRecord::kTu + kTileC, part_rows);
        if constexpr (kWritesOutput) part(ChunkRecord::kP, part_rows);
        if constexpr (kWritesOutput && kSplitOutput) part(ChunkRecord::kP + kTileC, part_rows);
        part(ChunkRecord::kGates, ChunkRecord::kBytes - ChunkRecord::kGates);
      } else {
        uint64_t* bar = barriers + ci % 2;
        if constexpr (kChainCopies == 2) {
          for (int i = threadIdx.x; i < (rows16 - rows) * 16; i += kThreads) {
            const int r = rows + i / 16, seg = i % 16;
            *reinterpret_cast<uint4*>(dK + r * kLdD + 8 * seg) = make_uint4(0, 0, 0, 0);
            if constexpr (kWritesOutput)
              *reinterpret_cast<uint4*>(dQ + r * kLdD + 8 * seg) = make_uint4(0, 0, 0, 0);
          }
          for (int i = threadIdx.x; kHasValues && i < (rows16 - rows) * (kVS / 8); i += kThreads) {
            const int r = rows + i / (kVS / 8), seg = i % (kVS / 8);
            *reinterpret_cast<uint4*>(dV + r * kLdV + 8 * seg) = make_uint4(0, 0, 0, 0);
          }
        }
        if (warp != 0) return;
        const uint32_t row_bytes =
            kChainCopies == 2 ? rows * (kHeadSize * 2) * (kWritesOutput ? 2 : 1) +
                                    (kHasValues ? rows * kRowV : 0)
                              : 0;
        const uint32_t bytes = row_bytes + rows16 * kLdD * 2 +
                               (kHasValues ? part_rows * (kSplitState ? 2 : 1) : 0) +
                               (kWritesOutput ? part_rows * (kSplitOutput ? 2 : 1) : 0) +
                               (ChunkRecord::kBytes - ChunkRecord::kGates);
        if (lane == 0) barrier_arrive_expect(bar, bytes);
        fence_proxy_async();  // the buffer's last ldmatrix reads before the bulk writes
        __syncwarp();
        if constexpr (kChainCopies == 2) {
          for (int r = lane; r < rows; r += 32) {
            const int64_t src = (t0 + r) * kQKHeads * kHeadSize;
            bulk_copy_to_shared(dK + r * kLdD, k_head + src, kHeadSize * 2, bar);
            if constexpr (kWritesOutput)
              bulk_copy_to_shared(dQ + r * kLdD, q_head + src, kHeadSize * 2, bar);
            if constexpr (kHasValues)
              bulk_copy_to_shared(dV + r * kLdV, v_head + (t0 + r) * kVHeads * kHeadSize, kRowV,
                                  bar);
          }
        }
        auto part = [&](int which, int offset, int n) {
          if (lane == which) bulk_copy_to_shared(dst + offset, rec + offset, n, bar);
        };
        part(0, ChunkRecord::kW, rows16 * kLdD * 2);
        part(1, ChunkRecord::kGates, ChunkRecord::kBytes - ChunkRecord::kGates);
        if constexpr (kHasValues) part(2, ChunkRecord::kTu, part_rows);
        if constexpr (kHasValues && kSplitState) part(3, ChunkRecord::kTu + kTileC, part_rows);
        if constexpr (kWritesOutput) part(4, ChunkRecord::kP, part_rows);
        if constexpr (kWritesOutput && kSplitOutput) part(5, ChunkRecord::kP + kTileC, part_rows);
      }
    }
  };

  // Issues chunk `ci`'s K, Q, V into buffer ci % 2 (rows past the chunk's end as zeros, rows
  // past its last 16-row tile not at all: nothing reads them), and kPrepared, its record.
  auto prefetch = [&](int ci) {
    const int64_t t0 = t_begin + int64_t{ci} * kChunk;
    const int rows = chunk_rows(length, ci);
    const int rows16 = (rows + 15) / 16 * 16;
    __nv_bfloat16* dK = sK0 + (ci % 2) * kChunk * kLdD;
    __nv_bfloat16* dQ = sQ0 + (ci % 2) * kChunk * kLdD;
    __nv_bfloat16* dV = sV0 + (ci % 2) * kChunk * kLdV;
    if (!kPrepared || kChainCopies != 2) {
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
    }
    prefetch_record(ci, t0, rows, rows16, dK, dQ, dV);
  };

  // Warp 0 holds the raw gate inputs of the next chunk: tokens 2 lane and 2 lane + 1.
  const float A_log = args.A_log[h], dt_bias = args.dt_bias[h];
  float gate_a[2] = {0.f, 0.f}, gate_b[2] = {0.f, 0.f};

  if constexpr (!kPrepared) zero_inverse_upper<kThreads>(reinterpret_cast<float*>(smem + Smem::kX));
  if constexpr (kPrepared) {
    if (threadIdx.x == 0) barrier_init(barriers, 1), barrier_init(barriers + 1, 1);
    __syncthreads();  // the barriers are initialised before any copy names them
  }
  if (chunks > 0) {
    prefetch(0);
    if (!kPrepared && warp == 0) load_chunk_gate_inputs(args, h, t_begin, length, 0, gate_a, gate_b);
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

    const KeyTiles key = key_tiles(ci);
    if constexpr (kPrepared) {
      if constexpr (kChainCopies != 2) copy_wait<1>();
      if constexpr (kChainCopies != 0) barrier_wait(barriers + ci % 2, (ci / 2) & 1);
      if constexpr (kChainCopies != 2) __syncthreads();  // every thread's cp.async landed
    } else {  // the key-only stages, shared out over the CTA's warps
      float* sL = reinterpret_cast<float*>(smem + Smem::kL);
      float* sX = reinterpret_cast<float*>(smem + Smem::kX);
      __nv_bfloat16* sW = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kL);  // where L was
      __nv_bfloat16* sTw = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kTw);  // hi, then lo
      __nv_bfloat16* sTu = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kTu);
      __nv_bfloat16* sP = reinterpret_cast<__nv_bfloat16*>(smem + Smem::kP);
      if (warp == 0) {
        const float in_a[2] = {gate_a[0], gate_a[1]}, in_b[2] = {gate_b[0], gate_b[1]};
        if (ci + 1 < chunks)
          load_chunk_gate_inputs(args, h, t_begin, length, ci + 1, gate_a, gate_b);
        compute_chunk_gates(in_a, in_b, A_log, dt_bias, rows, key.gates);
      }
      copy_wait<1>();
      __syncthreads();
      decay_products<kWarps, kWritesOutput>(sK, sQ, sL, sP, key.gates, tiles);
      __syncthreads();
      invert_unit_lower<kThreads>(sL, sX, tiles);
      __syncthreads();
      inverse_factors<kThreads>(sX, key.gates, sTw, sTu, tiles);
      __syncthreads();
      w_product<kWarps>(sTw, sK, sW, tiles);
    }

    float vn[8][4] = {};  // Vn^T, from U^T (zero without values; U^T in the first half only)
    if constexpr (kHasValues)
      if (key_half == 0) u_product<kLdV>(vn, sV, 16 * row_group, key.tu, tiles);
    if constexpr (!kPrepared) __syncthreads();  // sW complete

    float o[8][4] = {};
    state_products<kWritesOutput, kKeyTiles>(vn, o, M, key.w, sQ, tiles, k0);
    if constexpr (kSplitK > 1) {
      // Each half summed Vn^T and O^T over its key columns: both halves take the sum of both
      // Vn^T partials (a + b and b + a are the same bits), the first half the O^T of both.
      float* x = reinterpret_cast<float*>(smem + Smem::kExchange) +
                 row_group * Smem::kExchangeFloats;
#pragma unroll
      for (int i = 0; i < 32; ++i) x[(key_half * 32 + i) * 32 + lane] = vn[i / 4][i % 4];
      if (key_half == 1)
#pragma unroll
        for (int i = 0; i < 32; ++i) x[(64 + i) * 32 + lane] = o[i / 4][i % 4];
      __syncthreads();
#pragma unroll
      for (int i = 0; i < 32; ++i) vn[i / 4][i % 4] += x[((1 - key_half) * 32 + i) * 32 + lane];
      if (key_half == 0)
#pragma unroll
        for (int i = 0; i < 32; ++i) o[i / 4][i % 4] += x[(64 + i) * 32 + lane];
    }
    if constexpr (kWritesOutput) {
      if (key_half == 0) {
        output_products(o, vn, key.p, key.gates.eg, args.scale, tiles);
        store_output(o, sO, args.output, t_begin + int64_t{ci} * kChunk, h, v_first, rows);
      }
    }
    state_update<kKeyTiles>(M, vn, sK, key.gates.fac, *key.gates.decay, tiles, k0);
  }

  // The final state (zero for an empty sequence, whatever the initial state was), or the group's
  // map; nothing for a group before the last in kFromEntry.
  if (new_state == nullptr) return;
#pragma unroll
  for (int nt = 0; nt < kKeyTiles; ++nt) {
    const int k = k0 + 8 * nt + 2 * c;
    *reinterpret_cast<float2*>(new_state + (v_first + g) * kHeadSize + k) =
        make_float2(M[nt][0], M[nt][1]);
    *reinterpret_cast<float2*>(new_state + (v_first + g + 8) * kHeadSize + k) =
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
