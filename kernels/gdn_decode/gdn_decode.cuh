// GDN decode (gdn_decode_qk4_v8_d128_k_last): the problem's fixed sizes and the arguments every
// route receives. Shared by the C ABI entry (entry.cu), the dispatch and the routes.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace khk::gdn_decode {

constexpr int kQKHeads = 4;       // q and k heads; value head h reads q/k head h / kGvaRatio
constexpr int kVHeads = 8;        // value heads: one 128x128 state matrix each
constexpr int kGvaRatio = kVHeads / kQKHeads;
constexpr int kHeadSize = 128;    // K = V = 128
constexpr int kStateFloats = kHeadSize * kHeadSize;

struct DecodeArgs {
  const __nv_bfloat16* q;  // [B, 1, 4, 128]
  const __nv_bfloat16* k;  // [B, 1, 4, 128]
  const __nv_bfloat16* v;  // [B, 1, 8, 128]
  const float* state;      // [B, 8, 128 (v), 128 (k)] k-last; null: the state is zero
  const float* A_log;      // [8]
  const __nv_bfloat16* a;  // [B, 1, 8]
  const float* dt_bias;    // [8]
  const __nv_bfloat16* b;  // [B, 1, 8]
  float scale;             // resolved: never 0
  __nv_bfloat16* output;   // [B, 1, 8, 128]
  float* new_state;        // [B, 8, 128, 128] k-last; may be `state` itself (in-place update)
  int64_t batch;           // B >= 1
};

}  // namespace khk::gdn_decode
