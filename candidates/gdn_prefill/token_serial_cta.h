// The token-serial route's program for one CTA, written once for the device kernel
// (route_token_serial.cuh) and for the host emulation the tests run it under
// (tests/cta_emulator.h): the CTA's thread index, barrier, lane exchange and shared memory come
// from a `Cta` object, so both run the same arithmetic and the same indexing.
//
// The route runs the reference's recurrence in fp32 with the state in registers. Every value row
// of a state evolves on its own (the delta rule mixes only the key dimension), so each row is a
// chain of T dependent steps and the rows run in parallel. Per token, with g and beta its gates:
//   delta = beta (v_row - g (row . k)),  row <- g row + delta k,
//   out_row = scale (row after the update) . q = scale (g (row . q) + delta (k . q))
// which is the reference's update (old_v = k . g S, S <- g S + k (beta v + (1 - beta) old_v -
// old_v)). A reduction round takes R tokens at once: with r the row before the round, the row
// before token j of the round is alpha_j r + sum_{i<j} w_i k_i (alpha_j the product of the
// earlier gates, w_i the decayed deltas), so its dot products with k_j and q_j are
//   alpha_j (r . k_j) + sum_{i<j} w_i (k_i . k_j)   and   alpha_j (r . q_j) + sum_{i<j} w_i (k_i . q_j):
// one exchange reduces r . k_j and r . q_j for all j, the staging supplies the k_i . k_j and
// k_i . q_j, and the recurrence over j runs on scalars. Then r <- alpha_R r + sum_i w_i k_i.
//
// Lane layout: kSerialLanes lanes per row, lane c holding the float4s c, c + L, c + 2L, ... of
// it, so a row's dot products reduce over L lanes in log2(L) exchange steps.
#pragma once

#include "serial_staging.h"

namespace khk::gdn_prefill {

/// acc += a * b, component-wise.
KHK_SERIAL_FN void fma4(const float4& a, const float4& b, float4& acc) {
  acc.x = fmaf(a.x, b.x, acc.x);
  acc.y = fmaf(a.y, b.y, acc.y);
  acc.z = fmaf(a.z, b.z, acc.z);
  acc.w = fmaf(a.w, b.w, acc.w);
}

// State rows move as 8-byte pairs: the entry guarantees state and new_state 8-byte alignment only.
KHK_SERIAL_FN float4 load_state4(const float* p) {
  const float2 lo = reinterpret_cast<const float2*>(p)[0];
  const float2 hi = reinterpret_cast<const float2*>(p)[1];
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

/// Sums each of the 2R values over the lanes of a row (the exchanges of all values interleave).
template <class Cta>
KHK_SERIAL_FN void row_sums(Cta& cta, float (&x)[2 * kSerialRound]) {
  KHK_UNROLL
  for (int offset = kSerialLanes / 2; offset > 0; offset /= 2) {
    float other[2 * kSerialRound];
    KHK_UNROLL
    for (int i = 0; i < 2 * kSerialRound; ++i) other[i] = cta.shfl_xor(x[i], offset);
    KHK_UNROLL
    for (int i = 0; i < 2 * kSerialRound; ++i) x[i] += other[i];
  }
}

/// One reduction round: tokens first .. first + count - 1 (count <= R) of the staged block.
/// Updates the lane's part of the row and returns, through `out`, the row's outputs. Branch-free
/// over the round's tokens, so the compiler can overlap their loads and products: a token past
/// `count` has zero k, q and v in the staging (prefetch_block), so its dot products are zero, and
/// it is kept out of the recurrence by a unit decay and a zero delta (selected, so not even an
/// overflowed row turns it into 0 * inf).
template <class Cta>
KHK_SERIAL_FN void serial_round(Cta& cta, const SerialStage& st, int round, int count, int col,
                                int row_in_cta, float scale, float4 (&m)[kSerialVecs],
                                float (&out)[kSerialRound]) {
  const int first = round * kSerialRound;
  float4 k[kSerialRound][kSerialVecs];
  float dots[2 * kSerialRound];  // r . k_j, then r . q_j
  KHK_UNROLL
  for (int j = 0; j < kSerialRound; ++j) {
    // Four FMA chains per dot product (one per float4 component), summed at the end.
    float4 sk = make_float4(0.0f, 0.0f, 0.0f, 0.0f), sq = sk;
    KHK_UNROLL
    for (int i = 0; i < kSerialVecs; ++i) {
      k[j][i] = *reinterpret_cast<const float4*>(&st.k[first + j][(col + i * kSerialLanes) * 4]);
      const float4 q = *reinterpret_cast<const float4*>(&st.q[first + j][(col + i * kSerialLanes) * 4]);
      fma4(m[i], k[j][i], sk);
      fma4(m[i], q, sq);
    }
    dots[j] = (sk.x + sk.y) + (sk.z + sk.w);
    dots[kSerialRound + j] = (sq.x + sq.y) + (sq.z + sq.w);
  }
  row_sums(cta, dots);

  // The recurrence over the round's tokens, on scalars: the row before token j is
  // alpha r + sum_{i<j} w[i] k_i.
  const float* pair = st.pair[round];
  float alpha = 1.0f, w[kSerialRound];
  KHK_UNROLL
  for (int j = 0; j < kSerialRound; ++j) {
    const bool in = j < count;
    const float2 gates = st.gates[first + j];
    const float g = in ? gates.x : 1.0f, beta = in ? gates.y : 0.0f;
    float sk = alpha * dots[j], sq = alpha * dots[kSerialRound + j];
    KHK_UNROLL
    for (int i = 0; i < j; ++i) {
      sk = fmaf(w[i], pair[j * kSerialRound + i], sk);  // k_j . k_i
      sq = fmaf(w[i], pair[i * kSerialRound + j], sq);  // k_i . q_j
    }
    const float delta = in ? beta * (st.v[first + j][row_in_cta] - g * sk) : 0.0f;
    out[j] = scale * fmaf(delta, pair[j * kSerialRound + j], g * sq);  // k_j . q_j
    alpha *= g;
    KHK_UNROLL
    for (int i = 0; i < j; ++i) w[i] *= g;
    w[j] = delta;
  }

  // r <- alpha r + sum_j w[j] k_j: the decay of r is ready before the deltas are.
  KHK_UNROLL
  for (int i = 0; i < kSerialVecs; ++i) {
    float4 r = make_float4(alpha * m[i].x, alpha * m[i].y, alpha * m[i].z, alpha * m[i].w);
    KHK_UNROLL
    for (int j = 0; j < kSerialRound; ++j) {
      r.x = fmaf(w[j], k[j][i].x, r.x);
      r.y = fmaf(w[j], k[j][i].y, r.y);
      r.z = fmaf(w[j], k[j][i].z, r.z);
      r.w = fmaf(w[j], k[j][i].w, r.w);
    }
    m[i] = r;
  }
}

/// Zeroes the CTA's rows of the output for tokens [from, to) (clamped to [0, T)).
template <class Cta>
KHK_SERIAL_FN void clear_rows(const PrefillArgs& args, Cta& cta, int64_t from, int64_t to, int h,
                              int row0) {
  from = from < 0 ? 0 : from;
  to = to > args.total_tokens ? args.total_tokens : to;
  for (int64_t i = cta.thread(); i < (to - from) * kSerialRows; i += kSerialThreads)
    args.output[((from + i / kSerialRows) * kVHeads + h) * kHeadSize + row0 + i % kSerialRows] =
        __float2bfloat16_rn(0.0f);
}

/// CTA `cta_index` = ((sequence * 8 + head) * kSerialTilesPerHead + tile): rows
/// tile * kSerialRows ... of that (sequence, head), over all of the sequence's tokens.
template <class Cta>
KHK_SERIAL_FN void token_serial_cta(const PrefillArgs& args, int64_t cta_index, Cta& cta) {
  SerialSmem& smem = *reinterpret_cast<SerialSmem*>(cta.smem);
  const int tid = cta.thread();
  const int lane = tid % 32, warp = tid / 32, col = lane % kSerialLanes;
  const int tile = static_cast<int>(cta_index % kSerialTilesPerHead);
  const int64_t head = cta_index / kSerialTilesPerHead;  // sequence * 8 + h
  const int h = static_cast<int>(head % kVHeads);
  const int64_t seq = head / kVHeads;
  const int row0 = tile * kSerialRows;
  const int row_in_cta = warp * kSerialRowsPerWarp + lane / kSerialLanes;

  // Before cu_seqlens (their loads in flight together with its read; serial_tuning.h,
  // SERIAL_GUESS_FIRST_BLOCK): the row, whose address needs no sequence bounds, and in sequence
  // 0's CTAs the first block guessed as tokens 0 .. guess_count - 1.
  float4 m[kSerialVecs];
  const int64_t row_at = (head * kHeadSize + row0 + row_in_cta) * kHeadSize;
  KHK_UNROLL
  for (int i = 0; i < kSerialVecs; ++i)
    m[i] = args.state ? load_state4(args.state + row_at + (col + i * kSerialLanes) * 4)
                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const bool guessed = kSerialGuessFirstBlock && seq == 0;
  const int guess_count =
      static_cast<int>(args.total_tokens < kSerialBlock ? args.total_tokens : kSerialBlock);
  SerialPrefetch pf;
  if (guessed) prefetch_block(args, tid, 0, guess_count, h, row0, pf);

  const int64_t begin = args.cu_seqlens[seq], end = args.cu_seqlens[seq + 1];
  const int64_t length = end > begin ? end - begin : 0;
  // Tokens before the first sequence or after the last one belong to none: their output is zero,
  // as in the reference. The first and the last sequence's CTAs clear them, each its own rows.
  if (seq == 0) clear_rows(args, cta, 0, begin, h, row0);
  if (seq == args.num_seqs - 1) clear_rows(args, cta, begin + length, args.total_tokens, h, row0);
  // An empty sequence leaves its state at zero whatever the initial state was, as the reference
  // does.
  if (length == 0) {
    KHK_UNROLL
    for (int i = 0; i < kSerialVecs; ++i) m[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  if (length > 0) {
    const float exp_A_log = expf(args.A_log[h]), dt_bias = args.dt_bias[h];
    const int64_t blocks = (length + kSerialBlock - 1) / kSerialBlock;
    const int first_count = static_cast<int>(length < kSerialBlock ? length : kSerialBlock);
    // The guess is the block the request would load where the sequence starts at token 0 and
    // its first block is as long: the same tokens, zero past the same count.
    if (!guessed || begin != 0 || first_count != guess_count)
      prefetch_block(args, tid, begin, first_count, h, row0, pf);
    stage_block(cta, smem, smem.stage[0], pf, exp_A_log, dt_bias);
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
      __nv_bfloat16* out = args.output + (t0 * kVHeads + h) * kHeadSize + row0 + row_in_cta;
      for (int round = 0; round * kSerialRound < count; ++round) {
        const int in_round = count - round * kSerialRound;
        float o[kSerialRound];
        serial_round(cta, st, round, in_round < kSerialRound ? in_round : kSerialRound, col,
                     row_in_cta, args.scale, m, o);
        if (col == 0) {
          KHK_UNROLL
          for (int j = 0; j < kSerialRound; ++j)
            if (j < in_round)
              out[int64_t{round * kSerialRound + j} * kVHeads * kHeadSize] = __float2bfloat16_rn(o[j]);
        }
      }
      if (more) stage_block(cta, smem, smem.stage[(blk + 1) & 1], pf, exp_A_log, dt_bias);
    }
  }

  KHK_UNROLL
  for (int i = 0; i < kSerialVecs; ++i)
    store_state4(args.new_state + row_at + (col + i * kSerialLanes) * 4, m[i]);
}

}  // namespace khk::gdn_prefill
