// Device buffers for GDN prefill micro-benchmarks (gdn_timeline.cu, gdn_cp_timeline.cu): the
// inputs and outputs of calls of up to max_tokens tokens in max_seqs sequences, in `sets` copies
// (a call on one set leaves another set's data cold in the L2), filled with small finite values:
// the numbers do not matter there, only the time. Include after the folder's dispatch.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "micro_common.cuh"

namespace micro {

struct PrefillBuffers {
  static constexpr int64_t kHeadsQK = 4, kHeadsV = 8, kD = 128;
  __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *a = nullptr, *b = nullptr,
                *out = nullptr;
  float *state = nullptr, *new_state = nullptr, *A_log = nullptr, *dt_bias = nullptr;
  int64_t* cu = nullptr;  // cu_seqlens: max_seqs + 1 per set
  int64_t max_tokens = 0, max_seqs = 0;

  /// Allocates and fills `sets` copies; false (the error printed) where an allocation fails.
  bool allocate(int64_t tokens, int64_t seqs, int64_t sets) {
    max_tokens = tokens, max_seqs = seqs;
    const int64_t qk = sets * tokens * kHeadsQK * kD * 2, vo = sets * tokens * kHeadsV * kD * 2;
    const int64_t gate = sets * tokens * kHeadsV * 2, states = sets * state_floats() * 4;
    if (!ok(cudaMalloc(&q, qk), "cudaMalloc") || !ok(cudaMalloc(&k, qk), "cudaMalloc") ||
        !ok(cudaMalloc(&v, vo), "cudaMalloc") || !ok(cudaMalloc(&a, gate), "cudaMalloc") ||
        !ok(cudaMalloc(&b, gate), "cudaMalloc") || !ok(cudaMalloc(&out, vo), "cudaMalloc") ||
        !ok(cudaMalloc(&state, states), "cudaMalloc") ||
        !ok(cudaMalloc(&new_state, states), "cudaMalloc") ||
        !ok(cudaMalloc(&A_log, sets * kHeadsV * 4), "cudaMalloc") ||
        !ok(cudaMalloc(&dt_bias, sets * kHeadsV * 4), "cudaMalloc") ||
        !ok(cudaMalloc(&cu, sets * (seqs + 1) * 8), "cudaMalloc"))
      return false;
    cudaMemset(q, 0x3c, qk);
    cudaMemset(k, 0x3c, qk);
    cudaMemset(v, 0x3c, vo);
    cudaMemset(a, 0x3c, gate);
    cudaMemset(b, 0x3c, gate);
    cudaMemset(state, 0, states);
    cudaMemset(A_log, 0, sets * kHeadsV * 4);
    cudaMemset(dt_bias, 0, sets * kHeadsV * 4);
    return true;
  }
  int64_t state_floats() const { return max_seqs * kHeadsV * kD * kD; }
  /// The cu_seqlens of set `set`.
  int64_t* offsets(int set) const { return cu + set * (max_seqs + 1); }
  /// A call on set `set` of `tokens` tokens in `seqs` sequences (its cu_seqlens copied in by the
  /// caller).
  khk::gdn_prefill::PrefillArgs args(int set, int64_t tokens, int64_t seqs) const {
    const int64_t qk = set * max_tokens * kHeadsQK * kD, vo = set * max_tokens * kHeadsV * kD;
    const int64_t gate = set * max_tokens * kHeadsV, st = set * state_floats();
    return {q + qk,     k + qk,        v + vo,          state + st,
            A_log + set * kHeadsV,     a + gate,        dt_bias + set * kHeadsV,
            b + gate,   offsets(set),  0.08f,           out + vo,
            new_state + st, tokens,    seqs};
  }
};

}  // namespace micro
