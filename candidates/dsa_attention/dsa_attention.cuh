// DSA sparse attention (dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64): the problem's fixed
// sizes and the arguments every route receives. Shared by the C ABI entry (entry.cu), the dispatch
// and the routes.
//
// Per query token t: up to kTopK indices into the flattened paged cache (page * 64 + offset; -1 is
// padding, wherever it sits; duplicates count twice). Each selected row is 512 ckv values (the key's
// latent part and the value) and 64 kpe values (the key's rope part). For each of the 16 heads:
//   logit_r = sm_scale * (q_nope . ckv_r + q_pe . kpe_r)
//   output  = sum_r softmax(logit)_r * ckv_r          (bf16)
//   lse     = log2(sum_r exp(logit_r))                  (base 2; -inf for a token with no row)
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace khk::dsa_attention {

constexpr int kHeads = 16;
constexpr int kCkvDim = 512;                   // the value and the key's latent part
constexpr int kKpeDim = 64;                    // the key's rope part
constexpr int kKeyDim = kCkvDim + kKpeDim;     // 576: one logit's dot product
constexpr int kPageSize = 64;
constexpr int kTopK = 2048;
constexpr float kLog2e = 1.4426950408889634f;

struct AttentionArgs {
  const __nv_bfloat16* q_nope;      // [T, 16, 512]
  const __nv_bfloat16* q_pe;        // [T, 16, 64]
  const __nv_bfloat16* ckv;         // [num_pages * 64, 512] (the paged cache, flattened)
  const __nv_bfloat16* kpe;         // [num_pages * 64, 64]
  const int32_t* indices;           // [T, 2048]
  float scale_log2;                 // sm_scale * log2(e): logits in base-2 units
  __nv_bfloat16* output;            // [T, 16, 512]
  float* lse;                       // [T, 16]
  int64_t tokens;                   // T >= 1
  int64_t cache_rows;               // num_pages * 64: an index outside [0, cache_rows) is padding
};

// Where the split route keeps its per-split partial results (a workspace; see route_split_kv.cuh).
struct SplitPartials {
  float* o;    // [T, splits, 16, 512]: unnormalised sum_r 2^(logit_r - m) * ckv_r
  float2* ml;  // [T, splits, 16]: (m, l), the split's running max and sum of 2^(logit - m)
};

/// Two floats as the bf16 pair of one 32-bit word (round to nearest even), lo first.
__host__ __device__ inline uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return static_cast<uint32_t>(__bfloat16_as_ushort(v.x)) |
         static_cast<uint32_t>(__bfloat16_as_ushort(v.y)) << 16;
}

}  // namespace khk::dsa_attention
