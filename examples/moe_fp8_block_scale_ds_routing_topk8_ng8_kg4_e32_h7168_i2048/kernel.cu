// A straightforward CUDA implementation of
// moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048: DeepSeek-V3 no-aux routing, then
// for every (token, local expert) pair GEMM1 (W13) -> SwiGLU -> GEMM2 (W2), weighted into the
// token's output. Written for clarity; the GEMMs use tensor cores only because fp32 CUDA-core GEMMs
// would take ~100 ms on the largest workloads (14107 tokens).
//
// Launch sequence (all on the given stream, no host synchronisation):
//   route_kernel        one thread per token: the 8 selected experts and their combine weights
//   build_lists_kernel  one CTA per local expert: the tokens routed to it, in token order
//   memset              fp32 output accumulator [T, 7168] := 0 (tokens with no local expert stay 0)
//   for each local expert (in order, so the fp32 accumulation order is fixed -> deterministic):
//     gemm1_swiglu_kernel  C[row] = SiLU(X2) * X1 where [X1 | X2] = A[token] . W13[e]^T
//     gemm2_kernel         accum[token] += weight * C[row] . W2[e]^T
//   cast_kernel         output = bf16(accum)
// The GEMMs live in expert_gemm.cu; moe.cuh holds what both files share.
//
// Numerics: fp8 e4m3 values are exact in bf16, so the MMAs (bf16 x bf16 -> fp32) multiply the fp8
// codes exactly; each 128-wide K block is accumulated on its own and then multiplied by its block
// scales in fp32 (the scales differ per K block), which is the reference's dequantize-then-multiply
// up to fp32 rounding. The only approximation is the SwiGLU output C, rounded to bf16 for GEMM2
// (relative error 2^-9, far inside the MoE tolerance of atol 1 / rtol 0.3).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "kh/abi.h"
#include "moe.cuh"

namespace {

using namespace kh_moe_example;

constexpr int kNumTensors = 11;  // logits bias hidden hidden_scale w13 w13_scale w2 w2_scale
                                 // local_expert_offset routed_scaling_factor | output
constexpr int kRouteThreads = 128;
constexpr int kListThreads = 1024;

const char* g_error = "";  // message for the last non-zero status (kh_moe_fp8_error)

int fail(int status, const char* message) {
  g_error = message;
  return status;
}

bool is_tensor(const DLTensor& t, uint8_t code, uint8_t bits,
               std::initializer_list<int64_t> shape) {
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1) return false;
  if (t.ndim != static_cast<int32_t>(shape.size()) || !t.data) return false;
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != shape.begin()[i]) return false;
    if (t.strides && t.shape[i] != 1 && t.strides[i] != stride) return false;
    stride *= t.shape[i];
  }
  return true;
}

template <typename T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// ---- workspace ----------------------------------------------------------------------------------

uint64_t align_up(uint64_t x) {
  return (x + 255) / 256 * 256;
}

// Carves the workspace; with base == nullptr it only computes the total size.
uint64_t carve_workspace(char* base, int64_t T, MoeBuffers* buffers) {
  uint64_t offset = 0;
  auto take = [&](uint64_t bytes) {
    char* p = base ? base + offset : nullptr;
    offset += align_up(bytes);
    return p;
  };
  const uint64_t t = static_cast<uint64_t>(T);
  MoeBuffers b;
  b.route_expert = reinterpret_cast<int32_t*>(take(t * kTopK * 4));
  b.route_weight = reinterpret_cast<float*>(take(t * kTopK * 4));
  b.count = reinterpret_cast<int32_t*>(take(kLocalExperts * 4));
  b.list_token = reinterpret_cast<int32_t*>(take(kLocalExperts * t * 4));
  b.list_weight = reinterpret_cast<float*>(take(kLocalExperts * t * 4));
  b.swiglu = reinterpret_cast<float*>(take(t * kIntermediate * 4));
  b.accum = reinterpret_cast<float*>(take(t * kHidden * 4));
  if (buffers) *buffers = b;
  return offset;
}

// ---- routing ------------------------------------------------------------------------------------

// DeepSeek-V3 no-aux routing of one token, in fp32 as the reference; equal scores go to the lower
// index (group or expert), as kh's reference does.
__global__ void __launch_bounds__(kRouteThreads)
    route_kernel(const float* logits, const __nv_bfloat16* bias, int64_t T, float scaling,
                 int32_t* route_expert, float* route_weight) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= T) return;
  float s[kExperts], biased[kExperts];  // s: sigmoid; biased: s + bias, used for selection only
  for (int e = 0; e < kExperts; ++e) {
    s[e] = 1.0f / (1.0f + expf(-logits[t * kExperts + e]));
    biased[e] = s[e] + __bfloat162float(bias[e]);
  }
  // Group score: the sum of the two largest biased scores of the group's 32 contiguous experts.
  float group_score[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    float top1 = -INFINITY, top2 = -INFINITY;
    for (int i = 0; i < kGroupSize; ++i) {
      const float x = biased[g * kGroupSize + i];
      if (x > top1) {
        top2 = top1;
        top1 = x;
      } else if (x > top2) {
        top2 = x;
      }
    }
    group_score[g] = top1 + top2;
  }
  // Keep the 4 best groups.
  bool kept[kGroups] = {};
  for (int n = 0; n < kKeptGroups; ++n) {
    int best = -1;
    for (int g = 0; g < kGroups; ++g)
      if (!kept[g] && (best < 0 || group_score[g] > group_score[best])) best = g;
    kept[best] = true;
  }
  // The 8 best experts of the kept groups (the reference masks the others to the lowest float,
  // which can never win against the 128 kept experts).
  int chosen[kTopK];
  bool taken[kExperts] = {};
  for (int n = 0; n < kTopK; ++n) {
    int best = -1;
    for (int e = 0; e < kExperts; ++e)
      if (kept[e / kGroupSize] && !taken[e] && (best < 0 || biased[e] > biased[best])) best = e;
    taken[best] = true;
    chosen[n] = best;
  }
  // Combine weights from the un-biased s, normalised over all 8 chosen experts (local or not),
  // summed in ascending expert order.
  float sum = 0.0f;
  for (int e = 0; e < kExperts; ++e)
    if (taken[e]) sum += s[e];
  sum += 1e-20f;
  for (int n = 0; n < kTopK; ++n) {
    route_expert[t * kTopK + n] = chosen[n];
    route_weight[t * kTopK + n] = (s[chosen[n]] / sum) * scaling;
  }
}

// One CTA per local expert: the list of (token, weight) routed to it, in increasing token order.
// Positions come from ballots and block-wide counts, not atomics, so the lists are deterministic.
__global__ void __launch_bounds__(kListThreads)
    build_lists_kernel(MoeBuffers buf, int64_t T, int local_expert_offset) {
  const int le = blockIdx.x;
  const int64_t ge = static_cast<int64_t>(local_expert_offset) + le;
  __shared__ int warp_count[kListThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t base = 0;
  for (int64_t chunk = 0; chunk < T; chunk += kListThreads) {
    const int64_t t = chunk + threadIdx.x;
    int slot = -1;
    if (t < T)
      for (int n = 0; n < kTopK; ++n)
        if (buf.route_expert[t * kTopK + n] == ge) slot = n;
    const uint32_t bits = __ballot_sync(0xffffffffu, slot >= 0);
    if (lane == 0) warp_count[warp] = __popc(bits);
    __syncthreads();
    int64_t before = base;
    for (int w = 0; w < kListThreads / 32; ++w) {
      if (w < warp) before += warp_count[w];
      base += warp_count[w];
    }
    if (slot >= 0) {
      const int64_t pos = le * T + before + __popc(bits & ((1u << lane) - 1u));
      buf.list_token[pos] = static_cast<int32_t>(t);
      buf.list_weight[pos] = buf.route_weight[t * kTopK + slot];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) buf.count[le] = static_cast<int32_t>(base);
}

__global__ void cast_kernel(const float* accum, __nv_bfloat16* output, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    output[i] = __float2bfloat16_rn(accum[i]);
}

}  // namespace

KH_EXPORT uint64_t kh_moe_fp8_workspace_bytes(const DLTensor* t, int32_t num_tensors) {
  if (num_tensors != kNumTensors || t[0].ndim != 2) return 0;
  return carve_workspace(nullptr, t[0].shape[0], nullptr);
}

KH_EXPORT int kh_moe_fp8(const DLTensor* t, int32_t num_tensors, void* stream, void* workspace,
                         uint64_t workspace_bytes) {
  if (num_tensors != kNumTensors || t[0].ndim != 2)
    return fail(KH_ERROR_INVALID_ARGUMENT, "expected 11 tensors, routing_logits [T, 256]");
  const int64_t T = t[0].shape[0];
  const bool offset_ok = is_tensor(t[8], kDLInt, 32, {}) || is_tensor(t[8], kDLInt, 64, {});
  const bool shapes_ok =
      is_tensor(t[0], kDLFloat, 32, {T, kExperts}) && is_tensor(t[1], kDLBfloat, 16, {kExperts}) &&
      is_tensor(t[2], kDLFloat8_e4m3fn, 8, {T, kHidden}) &&
      is_tensor(t[3], kDLFloat, 32, {kHiddenBlocks, T}) &&
      is_tensor(t[4], kDLFloat8_e4m3fn, 8, {kLocalExperts, kGemm1Out, kHidden}) &&
      is_tensor(t[5], kDLFloat, 32, {kLocalExperts, kGemm1Out / kBlock, kHiddenBlocks}) &&
      is_tensor(t[6], kDLFloat8_e4m3fn, 8, {kLocalExperts, kHidden, kIntermediate}) &&
      is_tensor(t[7], kDLFloat, 32, {kLocalExperts, kHiddenBlocks, kIntermediate / kBlock}) &&
      offset_ok && is_tensor(t[9], kDLFloat, 32, {}) &&
      is_tensor(t[10], kDLBfloat, 16, {T, kHidden});
  if (!shapes_ok) return fail(KH_ERROR_INVALID_ARGUMENT, "a tensor has the wrong shape or dtype");
  if (T == 0) return KH_OK;
  if (T > 65535LL * kTileM || T > INT32_MAX / kLocalExperts)
    return fail(KH_ERROR_INVALID_ARGUMENT, "seq_len too large for this implementation's grid");
  const uint64_t needed = carve_workspace(nullptr, T, nullptr);
  if (!workspace || workspace_bytes < needed)
    return fail(KH_ERROR_INVALID_ARGUMENT, "workspace smaller than kh_moe_fp8_workspace_bytes");

  // Scalars are 0-d host tensors.
  const int64_t offset =
      t[8].dtype.bits == 32 ? *data_of<const int32_t>(t[8]) : *data_of<const int64_t>(t[8]);
  const float scaling = *data_of<const float>(t[9]);
  MoeGemmArgs g;
  g.hidden = data_of<const uint8_t>(t[2]);
  g.hidden_scale = data_of<const float>(t[3]);
  g.w13 = data_of<const uint8_t>(t[4]);
  g.w13_scale = data_of<const float>(t[5]);
  g.w2 = data_of<const uint8_t>(t[6]);
  g.w2_scale = data_of<const float>(t[7]);
  g.T = T;
  carve_workspace(static_cast<char*>(workspace), T, &g.buf);
  if (!aligned16(g.hidden) || !aligned16(g.w13) || !aligned16(g.w2))
    return fail(KH_ERROR_INVALID_ARGUMENT, "fp8 tensors must be 16-byte aligned");

  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned token_blocks = static_cast<unsigned>((T + kRouteThreads - 1) / kRouteThreads);
  route_kernel<<<token_blocks, kRouteThreads, 0, s>>>(
      data_of<const float>(t[0]), data_of<const __nv_bfloat16>(t[1]), T, scaling,
      g.buf.route_expert, g.buf.route_weight);
  // An offset far outside the expert range selects nothing; clamp it so it fits an int.
  const int clamped_offset = static_cast<int>(offset < -kExperts  ? -kExperts
                                              : offset > kExperts ? kExperts
                                                                  : offset);
  build_lists_kernel<<<kLocalExperts, kListThreads, 0, s>>>(g.buf, T, clamped_offset);
  if (cudaMemsetAsync(g.buf.accum, 0, static_cast<size_t>(T) * kHidden * sizeof(float), s) !=
      cudaSuccess)
    return fail(KH_ERROR_LAUNCH, "cudaMemsetAsync failed");
  const unsigned row_tiles = static_cast<unsigned>((T + kTileM - 1) / kTileM);
  for (int le = 0; le < kLocalExperts; ++le) {
    if (offset + le < 0 || offset + le >= kExperts) continue;  // not a real expert: skipped
    launch_expert_gemms(g, le, row_tiles, s);
  }
  cast_kernel<<<1024, 256, 0, s>>>(g.buf.accum, data_of<__nv_bfloat16>(t[10]), T * kHidden);
  if (cudaGetLastError() != cudaSuccess) return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT const char* kh_moe_fp8_error() {
  return g_error;
}
