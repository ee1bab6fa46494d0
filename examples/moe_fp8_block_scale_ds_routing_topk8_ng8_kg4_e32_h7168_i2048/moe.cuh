// Shared by kernel.cu (routing, entry point) and expert_gemm.cu (the two expert GEMMs) of the
// example MoE candidate: the definition's constants, the workspace buffers and the GEMM launcher.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kh_moe_example {

constexpr int kExperts = 256;
constexpr int kLocalExperts = 32;
constexpr int kTopK = 8;
constexpr int kGroups = 8;
constexpr int kGroupSize = kExperts / kGroups;  // 32 contiguous experts per group
constexpr int kKeptGroups = 4;
constexpr int kHidden = 7168;
constexpr int kIntermediate = 2048;
constexpr int kGemm1Out = 2 * kIntermediate;
constexpr int kBlock = 128;  // fp8 block-scale granularity along every dimension
constexpr int kHiddenBlocks = kHidden / kBlock;  // 56

// GEMM tiling: 64 list rows per CTA, 64 K columns per shared-memory stage (two stages per scale
// block), 8 warps.
constexpr int kTileM = 64;
constexpr int kTileK = 64;
constexpr int kStepsPerBlock = kBlock / kTileK;
constexpr int kSmemStride = kTileK + 8;  // bf16 per shared-memory row, padded (expert_gemm.cu)
constexpr int kGemmThreads = 256;
constexpr int kGemm1TileI = 64;   // intermediate columns per GEMM1 CTA (= 128 W13 rows)
constexpr int kGemm2TileN = 128;  // hidden columns per GEMM2 CTA (= one W2 scale block)

// Scratch carved from the harness's workspace (sizes for T tokens in carve_workspace).
struct MoeBuffers {
  int32_t* route_expert;  // [T, 8] global expert ids chosen per token
  float* route_weight;    // [T, 8] their combine weights
  int32_t* count;         // [32] tokens routed to each local expert
  int32_t* list_token;    // [32, T] those tokens, in increasing order
  float* list_weight;     // [32, T] and their weights for that expert
  float* swiglu;          // [T, 2048] SwiGLU output of the current expert, by list position
  float* accum;           // [T, 7168] fp32 output accumulator
};

struct MoeGemmArgs {
  const uint8_t* hidden;      // [T, 7168] fp8
  const float* hidden_scale;  // [56, T] (transposed: the scale of token t, block kb is [kb, t])
  const uint8_t* w13;         // [32, 4096, 7168] fp8
  const float* w13_scale;     // [32, 32, 56]
  const uint8_t* w2;          // [32, 7168, 2048] fp8
  const float* w2_scale;      // [32, 56, 16]
  int64_t T;
  MoeBuffers buf;
};

/// Launches GEMM1 + SwiGLU then GEMM2 of local expert `le` on `stream` (expert_gemm.cu), for up to
/// `row_tiles` * 64 routed tokens; CTAs past the expert's token count exit at once.
__attribute__((visibility("hidden"))) void launch_expert_gemms(const MoeGemmArgs& args, int le,
                                                               unsigned row_tiles,
                                                               cudaStream_t stream);

}  // namespace kh_moe_example
