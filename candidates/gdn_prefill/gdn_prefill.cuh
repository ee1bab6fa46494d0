// GDN prefill (gdn_prefill_qk4_v8_d128_k_last): the problem's fixed sizes and the arguments every
// route receives. Shared by the C ABI entry (entry.cu), the dispatch and the routes.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace khk::gdn_prefill {

constexpr int kQKHeads = 4;       // q and k heads; value head h reads q/k head h / kGvaRatio
constexpr int kVHeads = 8;        // value heads: one 128x128 state matrix each
constexpr int kGvaRatio = kVHeads / kQKHeads;
constexpr int kHeadSize = 128;    // K = V = 128
constexpr int kStateFloats = kHeadSize * kHeadSize;

struct PrefillArgs {
  const __nv_bfloat16* q;     // [T, 4, 128]
  const __nv_bfloat16* k;     // [T, 4, 128]
  const __nv_bfloat16* v;     // [T, 8, 128]
  const float* state;         // [N, 8, 128 (v), 128 (k)] k-last; null: every state starts at zero
  const float* A_log;         // [8]
  const __nv_bfloat16* a;     // [T, 8]
  const float* dt_bias;       // [8]
  const __nv_bfloat16* b;     // [T, 8]
  const int64_t* cu_seqlens;  // [N + 1], on the device: sequence i is tokens [cu[i], cu[i+1])
  float scale;                // resolved: never 0
  __nv_bfloat16* output;      // [T, 8, 128]
  float* new_state;           // [N, 8, 128, 128] k-last; may be `state` itself
  int64_t total_tokens;       // T
  int64_t num_seqs;           // N >= 1
};

}  // namespace khk::gdn_prefill
